package metal

import (
	"fmt"
	"math"

	"github.com/ingotml/ingot/kernels"
)

// Metal's limits that the encoder checks, since breaking them aborts the
// process (or silently misbehaves) instead of returning an error.
const (
	// maxBufferIndex is the size of a compute encoder's buffer table.
	maxBufferIndex = 31
	// maxSetBytes is the most setBytes:length:atIndex: accepts.
	maxSetBytes = 4096
	// maxGroupDim is the largest threadgroup side.
	maxGroupDim = 1024
)

// encoder is the kernels.Encoder of GPU.Run: it checks what a kernel's Encode
// asks for and passes it on to the backend. The first problem is kept and
// everything after it in the launch is ignored; Run then reports it.
type encoder struct {
	r          *runner
	kernel     *kernels.Kernel
	pipe       pipeline // nil until Entry succeeds
	entry      string
	dispatches int
	err        error
	scratch    map[int]scratchRegion // the launch's scratch by buffer index
	launch     *kernels.Launch
	bound      map[int]deviceBuffer // what the launch bound, by index
}

// start readies the encoder for one launch of k.
func (e *encoder) start(l *kernels.Launch) {
	e.kernel, e.pipe, e.entry, e.dispatches, e.err, e.launch = l.Kernel, nil, "", 0, nil, l
	clear(e.scratch)
	if e.bound == nil {
		e.bound = map[int]deviceBuffer{}
	}
	clear(e.bound)
}

// bind records a binding and counts its bytes toward the command buffer's.
func (e *encoder) bind(index int, b deviceBuffer, n int) {
	e.bound[index] = b
	e.r.cbBytes += n
}

func (e *encoder) fail(format string, args ...any) {
	if e.err == nil {
		e.err = fmt.Errorf(format, args...)
	}
}

// Entry selects the MSL function, compiling the kernel's family on first use.
func (e *encoder) Entry(name string) {
	if e.err != nil {
		return
	}
	p, err := e.r.cache.get(e.r.b, e.kernel.Family, name)
	if err != nil {
		e.err = err
		return
	}
	e.pipe, e.entry = p, name
	e.r.b.setPipeline(p)
}

// MaxThreads is the selected pipeline's maxTotalThreadsPerThreadgroup (1024
// before Entry succeeds; the dispatch then fails anyway).
func (e *encoder) MaxThreads() int {
	if e.pipe == nil {
		return maxGroupDim
	}
	return e.pipe.maxThreads()
}

func (e *encoder) checkIndex(index int) bool {
	if index < 0 || index >= maxBufferIndex {
		e.fail("buffer index %d is not in 0..%d", index, maxBufferIndex-1)
		return false
	}
	return true
}

// SetArg binds the MTLBuffer behind a.Data at a.Offset elements. a.Data must
// be the contents of a buffer the GPU's provider made (it is, for arrays the
// graph allocates); host memory cannot be bound.
func (e *encoder) SetArg(index int, a *kernels.Arg) {
	if e.err != nil || !e.checkIndex(index) {
		return
	}
	if a == nil {
		e.fail("buffer(%d): nil argument", index)
		return
	}
	if !a.DType.Valid() {
		e.fail("buffer(%d): unknown dtype %v", index, a.DType)
		return
	}
	n := a.Size()
	if n == 0 {
		// An empty array: nothing to read or write. Bound as nil even when it is a
		// view into a real buffer, whose offset may equal the buffer's length (the
		// validation layer rejects that binding).
		e.r.b.setBuffer(index, nil, 0)
		delete(e.bound, index)
		return
	}
	if len(a.Data) == 0 {
		e.fail("buffer(%d): a %v array of %d elements has no data", index, a.DType, n)
		return
	}
	buf, base, limit, ok := e.r.b.buffer(&a.Data[0])
	if !ok {
		e.fail("buffer(%d): the argument's data is not a live Metal buffer of this GPU", index)
		return
	}
	sz := a.DType.Size()
	if a.Offset < 0 || (n > 0 && (a.Offset+a.Span())*sz > limit) || a.Offset*sz > limit {
		e.fail("buffer(%d): %v array of shape %v at element offset %d reaches past the end of its %d-byte buffer",
			index, a.DType, a.Dims(), a.Offset, limit)
		return
	}
	e.r.b.setBuffer(index, buf, base+a.Offset*sz)
	e.bind(index, buf, n*sz)
}

// SetBytes binds a small constant block (setBytes:length:atIndex:).
func (e *encoder) SetBytes(index int, b []byte) {
	if e.err != nil || !e.checkIndex(index) {
		return
	}
	if len(b) == 0 || len(b) > maxSetBytes {
		e.fail("buffer(%d): a constant block of %d bytes; Metal takes 1 to %d", index, len(b), maxSetBytes)
		return
	}
	e.r.b.setBytes(index, b)
}

// ErrorWord binds the batch's device error word at index and the launch's
// position in the batch (a uint32 constant) at index+1.
func (e *encoder) ErrorWord(index int) {
	if e.err != nil || !e.checkIndex(index) || !e.checkIndex(index+1) {
		return
	}
	e.r.errorWord(e, index)
}

// Scratch binds n bytes of the batch's scratch at index: the same region each
// time the launch binds that index, another one for every other launch.
func (e *encoder) Scratch(index, n int) {
	if e.err != nil || !e.checkIndex(index) {
		return
	}
	if n <= 0 {
		e.fail("buffer(%d): scratch of %d bytes", index, n)
		return
	}
	s, ok := e.scratch[index]
	if ok && s.len != n {
		e.fail("buffer(%d): scratch of %d bytes, bound before with %d", index, n, s.len)
		return
	}
	if !ok {
		var err error
		if s, err = e.r.scratch(n); err != nil {
			e.fail("buffer(%d): scratch: %w", index, err)
			return
		}
		if e.scratch == nil {
			e.scratch = map[int]scratchRegion{}
		}
		e.scratch[index] = s
	}
	e.r.b.setBuffer(index, s.buf, s.off)
	e.bind(index, s.buf, n)
}

// DispatchThreads launches a grid of threads (dispatchThreads:threadsPerThreadgroup:).
func (e *encoder) DispatchThreads(grid, group [3]int) { e.dispatch(dispatchThreads, grid, group) }

// DispatchThreadgroups launches groups of threads
// (dispatchThreadgroups:threadsPerThreadgroup:).
func (e *encoder) DispatchThreadgroups(groups, group [3]int) {
	e.dispatch(dispatchThreadgroups, groups, group)
}

func (e *encoder) dispatch(kind dispatchKind, size, group [3]int) {
	if e.err != nil {
		return
	}
	if e.pipe == nil {
		e.fail("dispatch before Entry selected a function")
		return
	}
	what := "grid"
	if kind == dispatchThreadgroups {
		what = "threadgroup count"
	}
	threads := 1
	for i := range 3 {
		if group[i] < 1 || group[i] > maxGroupDim {
			e.fail("%s: threadgroup %v: every side must be 1 to %d", e.entry, group, maxGroupDim)
			return
		}
		total := size[i] // threads along this side, which Metal counts in 32 bits
		if kind == dispatchThreadgroups && size[i] <= math.MaxUint32 {
			total *= group[i]
		}
		if size[i] < 1 || total > math.MaxUint32 {
			e.fail("%s: %s %v: every side must be at least 1 and the grid under 2^32 threads a side", e.entry, what, size)
			return
		}
		threads *= group[i]
	}
	if limit := e.pipe.maxThreads(); threads > limit {
		e.fail("%s: threadgroup %v has %d threads; its pipeline allows at most %d", e.entry, group, threads, limit)
		return
	}
	// A dispatch that binds a buffer an earlier dispatch of this command buffer
	// wrote waits for those writes; the launch's output and scratch count as
	// written once it has dispatched.
	for _, b := range e.bound {
		if e.r.cbWritten[b] {
			e.r.b.barrier()
			break
		}
	}
	e.r.b.dispatch(kind, size, group)
	e.dispatches++
	if out := e.launch.Out(); out.Size() > 0 && len(out.Data) > 0 {
		if b, _, _, ok := e.r.b.buffer(&out.Data[0]); ok {
			e.r.cbWritten[b] = true
		}
	}
	for _, s := range e.scratch {
		e.r.cbWritten[s.buf] = true
	}
}
