package metal

const (
	// smallBufferLimit: requests below it are sub-allocated from the small heap,
	// as MLX does, to spare the driver many tiny allocations.
	smallBufferLimit = 256
	// smallHeapSize is the size of the one small-buffer heap (MLX's 1 MiB).
	smallHeapSize = 1 << 20
)

// heapPolicy is the provider's choice of where each buffer comes from, apart
// from the Metal calls (buffer_darwin.go makes them), so that it is tested on
// every platform. As in MLX there is one heap, made at the first small request
// and kept for the life of the process; when it refuses a buffer (full, or too
// fragmented) the buffer comes from the device instead. A new heap per refusal
// would let a leak of small buffers pin heap after heap. Every buffer is one
// object either way, which the allocator counts the same.
type heapPolicy struct {
	usable bool      // the device has heaps (not a paravirtual GPU)
	state  heapState // whether the heap was made
	live   [2]int    // live buffers by source
}

// heapState is whether the one heap exists.
type heapState uint8

const (
	heapNotMade heapState = iota // no small request yet
	heapMade                     // made: small requests try it first
	heapFailed                   // the device refused it: never asked again
)

// source is where a buffer came from.
type source uint8

const (
	fromDevice source = iota // a buffer of its own
	fromHeap                 // a sub-allocation of the small heap
)

// action is what Alloc does for a request.
type action uint8

const (
	useDevice       action = iota // make a device buffer
	useHeap                       // try the heap, then the device
	makeHeapThenUse               // make the heap, record it with heapMade, then as useHeap
)

// plan returns what to do for a request of n bytes.
func (p *heapPolicy) plan(n int) action {
	if n >= smallBufferLimit || !p.usable {
		return useDevice
	}
	switch p.state {
	case heapNotMade:
		return makeHeapThenUse
	case heapMade:
		return useHeap
	}
	return useDevice
}

// place makes a buffer of n bytes where the policy says, through the Metal
// calls given: newHeap makes the heap, inHeap and onDevice a buffer; each
// reports false when the device refuses. It returns the buffer's source, or
// ok false when the device refused the buffer too.
func (p *heapPolicy) place(n int, newHeap, inHeap, onDevice func() bool) (s source, ok bool) {
	a := p.plan(n)
	if a == makeHeapThenUse {
		p.heapMade(newHeap())
		a = p.plan(n)
	}
	if a == useHeap && inHeap() {
		p.allocated(fromHeap)
		return fromHeap, true
	}
	if onDevice() {
		p.allocated(fromDevice)
		return fromDevice, true
	}
	return fromDevice, false
}

// heapMade records whether the device made the heap that plan asked for.
func (p *heapPolicy) heapMade(ok bool) {
	if ok {
		p.state = heapMade
	} else {
		p.state = heapFailed
	}
}

// allocated records a buffer made from s; released, one released.
func (p *heapPolicy) allocated(s source) { p.live[s]++ }
func (p *heapPolicy) released(s source)  { p.live[s]-- }

// buffers is the number of live buffers, from the heap or not: one object each,
// as the allocator counts them.
func (p *heapPolicy) buffers() int { return p.live[fromDevice] + p.live[fromHeap] }

// heaps is the number of live heaps: 0 or 1, whatever was allocated.
func (p *heapPolicy) heaps() int {
	if p.state == heapMade {
		return 1
	}
	return 0
}

// heapBytes is the memory the heap holds, used or not: the allocator counts
// each sub-allocation's own bytes, so this is what the device's figures add.
func (p *heapPolicy) heapBytes() int64 { return int64(p.heaps()) * smallHeapSize }
