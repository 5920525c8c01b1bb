package kernels

import (
	"runtime/debug"
	"sync/atomic"
)

// Helper passes side work from a kernel running on a device's worker goroutine to a
// second goroutine that would otherwise only wait for it: on the CPU device, the graph
// that submitted the work helps while it waits (graph's executor.wait), so a decode
// step uses the machine's second core and its memory bandwidth. The fused blocks hand
// over products whose result they need only later: the MoE block its shared expert,
// the GatedDeltaNet block its z projection. Large products (a quantized or half
// matrix of a megabyte or more: the real-size models' projections and head) split
// their rows between the two (parallelRows); small ones do not, since a round trip
// between the cores costs about what half of a small product saves.
//
// A posted job is joined before its result is used: if no helper has taken it by
// then, the kernel runs it itself. Either way it runs once, with the same arithmetic,
// so results never depend on whether help came. One job is on offer at a time, and
// only the worker posts; the job lives in the Helper, so posting allocates nothing.
type Helper struct {
	state atomic.Int32 // jobIdle, jobOffered, jobTaken, jobDone
	job   helpJob
	// panicked is what the job panicked with on the helper's goroutine (a memory
	// fault on a weight mapped from a file, say): join panics with it again on the
	// worker, whose device turns it into the evaluation's error.
	panicked any
}

const (
	jobIdle = iota
	jobOffered
	jobTaken
	jobDone
)

// helpJob is a job a helper can run: a matrix-vector product gemvF32(x, w, ld, out),
// or, when glu is set, a SwiGLU expert swiGLU(x, w, up, down, act, upv, ex, out), or
// when fn is set, fn (a closure, for work large enough that its allocation is noise).
type helpJob struct {
	fn func()

	x, w, out []float32
	ld        int

	glu                    bool
	up, down, act, upv, ex []float32
}

func (j *helpJob) run() {
	if j.fn != nil {
		j.fn()
		return
	}
	if j.glu {
		swiGLU(j.x, j.w, j.up, j.down, j.act, j.upv, j.ex, j.out)
		return
	}
	gemvF32(j.x, j.w, j.ld, j.out)
}

// post offers j and reports whether it did: a nil Helper, or one whose previous job
// is not joined yet, takes nothing, and the caller runs j's work itself.
func (h *Helper) post(j helpJob) bool {
	if h == nil || h.state.Load() != jobIdle {
		return false
	}
	h.job = j
	h.state.Store(jobOffered) // publishes the job
	return true
}

// postOrRun posts j, or runs it here if it cannot be posted.
func (h *Helper) postOrRun(j helpJob) {
	if !h.post(j) {
		j.run()
	}
}

// join returns when the posted job, if any, has run: on this goroutine if no helper
// took it, else on the helper's.
func (h *Helper) join() {
	if h == nil || h.state.Load() == jobIdle {
		return
	}
	if h.state.CompareAndSwap(jobOffered, jobTaken) {
		h.runGuarded() // a panic must not leave the slot taken: it is raised below
	} else {
		for h.state.Load() != jobDone {
			// The helper is running it: a few microseconds of memory-bound work.
		}
	}
	h.job = helpJob{} // hold no buffers between jobs
	p := h.panicked
	h.panicked = nil
	h.state.Store(jobIdle)
	if p != nil {
		panic(p)
	}
}

// parallelRows runs f over the rows [0, n) in chunks of step rows, which this
// goroutine and, if it takes the offer in time, h's helper claim in turn: whoever is
// free takes the next chunk, so a helper that comes late or runs slowly (a busy
// machine) holds the worker up by one chunk at most. It returns when every chunk has
// run; each chunk runs once. f gets a scratch index, 0 or 1, distinct between the
// two goroutines running at once. With a nil h it runs every chunk here.
func (h *Helper) parallelRows(n, step int, f func(r0, r1, scratch int)) {
	var next atomic.Int64
	loop := func(scratch int) { claimChunks(&next, n, step, scratch, f) }
	if !h.post(helpJob{fn: func() { loop(1) }}) {
		loop(0)
		return
	}
	defer h.join() // the helper's part is done before a panic of this one goes on
	h.nudge()
	loop(0)
}

// claimChunks runs f over the chunks of step rows of [0, n) that this goroutine
// claims from next, the counter the goroutines sharing the rows take chunks from.
func claimChunks(next *atomic.Int64, n, step, scratch int, f func(r0, r1, scratch int)) {
	for {
		r0 := int(next.Add(int64(step))) - step
		if r0 >= n {
			return
		}
		f(r0, min(n, r0+step), scratch)
	}
}

// Serve runs the jobs offered to h until stop is closed: the loop of a goroutine with
// nothing else to do (benchmarks; the CPU device's graph helps only while it waits
// for a batch).
func (h *Helper) Serve(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
			h.Help()
		}
	}
}

// Help runs the job on offer, if any, and reports whether it ran one.
func (h *Helper) Help() bool {
	if h.state.Load() != jobOffered || !h.state.CompareAndSwap(jobOffered, jobTaken) {
		return false
	}
	h.runGuarded()
	h.state.Store(jobDone)
	return true
}

// runGuarded runs the job on the helper's goroutine, keeping a panic (memory faults
// included) for join instead of crashing the helper.
func (h *Helper) runGuarded() {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() { h.panicked = recover() }()
	h.job.run()
}

// parallelStreams is parallelRows for rows read once from memory (a decode's
// products): each goroutine takes its half of [0, n) from the front, chunk by chunk,
// so that it reads one sequential stream (with parallelRows' alternating chunks each
// core restarts its prefetch every chunk), and once its half is done takes chunks from
// the back of the other's half, so a helper that comes late or runs slowly still holds
// the worker up by one chunk at most. Each chunk runs once; f's scratch index is 0
// here, 1 on the helper. A 0.8B decode, alternating with parallelRows in one process:
// bfloat16 24.7 -> 25.9 tok/s, 4-bit 49.8 -> 56.1 (medians of six).
func (h *Helper) parallelStreams(n, step int, f func(r0, r1, scratch int)) {
	if h == nil || n >= 1<<31 {
		h.parallelRows(n, step, f)
		return
	}
	mid := min(n, (n/2+step-1)/step*step)
	var halves [2]atomic.Uint64 // a half's rows left: lo<<32 | hi
	halves[0].Store(uint64(mid))
	halves[1].Store(uint64(mid)<<32 | uint64(n))
	take := func(r *atomic.Uint64, front bool) (int, int, bool) {
		for {
			v := r.Load()
			lo, hi := int(v>>32), int(uint32(v))
			if lo >= hi {
				return 0, 0, false
			}
			a, b := lo, min(hi, lo+step)
			nv := uint64(b)<<32 | uint64(hi)
			if !front {
				a, b = max(lo, hi-step), hi
				nv = uint64(lo)<<32 | uint64(a)
			}
			if r.CompareAndSwap(v, nv) {
				return a, b, true
			}
		}
	}
	loop := func(own int) {
		for a, b, ok := take(&halves[own], true); ok; a, b, ok = take(&halves[own], true) {
			f(a, b, own)
		}
		for a, b, ok := take(&halves[1-own], false); ok; a, b, ok = take(&halves[1-own], false) {
			f(a, b, own)
		}
	}
	if !h.post(helpJob{fn: func() { loop(1) }}) {
		loop(0)
		return
	}
	defer h.join() // the helper's part is done before a panic of this one goes on
	h.nudge()
	loop(0)
}

// nudge starts a goroutine to take h's offer when no helper has taken it within
// wideWaitPolls: the caller that helps may be building the next step instead of
// waiting, and an idle core would then stay idle.
func (h *Helper) nudge() {
	for i := 0; i < wideWaitPolls && h.state.Load() == jobOffered; i++ {
	}
	if h.state.Load() == jobOffered {
		go h.Help()
	}
}

// parallelWide is parallelRows for work of several milliseconds (a prefill's
// products): if no helper takes the offer within wideWaitPolls (the caller evaluates
// its own batch, or h is nil), a new goroutine runs it instead, so the second core
// works from the start either way. Chunks are claimed as in
// parallelRows; each runs once, and f's scratch index is 0 here, 1 on the other.
func (h *Helper) parallelWide(n, step int, f func(r0, r1, scratch int)) {
	var next atomic.Int64
	loop := func(scratch int) { claimChunks(&next, n, step, scratch, f) }
	job := helpJob{fn: func() { loop(1) }}
	if !h.post(job) {
		h = new(Helper) // a private slot: only nudge's goroutine takes it
		h.post(job)
	}
	defer h.join() // the other goroutine's part is done before a panic of this one goes on
	h.nudge()
	loop(0)
}

// wideWaitPolls is how many times nudge looks for a polling helper's take before it
// starts a goroutine of its own (about a microsecond).
const wideWaitPolls = 1000

// splitElems is the elements (a megabyte of float32) from which an elementwise or
// row-wise kernel splits its rows between the two cores: a prefill chunk's
// activations, where a single core left the other idle for several percent of the
// chunk. A decode step's rows stay whole.
const splitElems = 1 << 18

// splitRows runs f over the rows [0, rows) of cols elements each, split between
// this goroutine and another (parallelWide) when they are splitElems or more. Rows
// never share an output and each row is computed as a whole, so the values do not
// depend on the split.
func (h *Helper) splitRows(rows, cols int, f func(r0, r1 int)) {
	if rows < 2 || rows*cols < splitElems {
		f(0, rows)
		return
	}
	h.parallelWide(rows, (rows+7)/8, func(r0, r1, _ int) { f(r0, r1) })
}

// splitElemsAligned is splitRows over n elements in blocks of 4096 (a multiple of
// every chunk and vector width the dense loops use, so each element takes the same
// path, vector or tail, as in one call): f gets [i0, i1).
func (h *Helper) splitElemsAligned(n int, f func(i0, i1 int)) {
	const block = 4096
	h.splitRows((n+block-1)/block, block, func(r0, r1 int) { f(r0*block, min(n, r1*block)) })
}
