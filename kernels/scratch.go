package kernels

import "sync"

// scratchPool lends float32 scratch to the fused blocks' Go twins. They used to make
// it per launch, half of a decode step's Go allocation bytes (about 190 KB a token);
// reused, it is memory still in cache and no garbage for the collector.
var scratchPool = sync.Pool{New: func() any { return new([]float32) }}

// getScratch returns n zeroed floats (as make would) in a buffer to give back with
// putScratch once the launch is done with it.
func getScratch(n int) *[]float32 {
	p := scratchPool.Get().(*[]float32)
	if cap(*p) < n {
		*p = make([]float32, n)
	}
	*p = (*p)[:n]
	clear(*p)
	return p
}

// getScratchDirty is getScratch without the clearing, for a caller that writes every
// element before it reads one (sdpa's scores: 80 KB a step at 10,000 keys).
func getScratchDirty(n int) *[]float32 {
	p := scratchPool.Get().(*[]float32)
	if cap(*p) < n {
		*p = make([]float32, n)
	}
	*p = (*p)[:n]
	return p
}

// putScratch returns a buffer from getScratch to the pool.
func putScratch(p *[]float32) { scratchPool.Put(p) }
