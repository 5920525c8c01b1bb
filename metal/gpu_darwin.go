//go:build darwin

package metal

import (
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"unsafe"

	"github.com/ingotml/ingot/alloc"
	"github.com/ingotml/ingot/kernels"
	"github.com/progrium/macdriver/macos/foundation"
	"github.com/progrium/macdriver/macos/metal"
	"github.com/progrium/macdriver/objc"
)

// The per-dispatch messages (pipeline, buffers, constant blocks, dispatches)
// go through the small Objective-C functions of encode_darwin.go; every other
// message is sent with objc.Call. The generated wrappers do not fit:
// those taking a protocol argument (setBuffer:, setComputePipelineState:,
// waitForFence:, ...) hand Metal a Go-implemented adaptor object instead of
// the object itself, the "new..." ones autorelease what we mean to own, the
// "...error:" ones pass the error object instead of its address, and MTLSize
// is an empty placeholder struct in the bindings.
var (
	selNewCommandQueue = objc.Sel("newCommandQueue")
	selNewFence        = objc.Sel("newFence")
	selNewLibrary      = objc.Sel("newLibraryWithSource:options:error:")
	selNewFunction     = objc.Sel("newFunctionWithName:")
	selNewPipeline     = objc.Sel("newComputePipelineStateWithFunction:error:")
	selCommandBuffer   = objc.Sel("commandBufferWithUnretainedReferences")
	selComputeEncoder  = objc.Sel("computeCommandEncoder")
	selWaitForFence    = objc.Sel("waitForFence:")
	selUpdateFence     = objc.Sel("updateFence:")
	selEndEncoding     = objc.Sel("endEncoding")
)

// languageVersion3_1 is MTLLanguageVersion3_1, which the bindings predate.
const languageVersion3_1 = metal.LanguageVersion(3<<16 | 1)

// GPU is the Metal graph device: it runs kernel launches by encoding their
// MSL twins into command buffers on its own command queue. Its method set is
// graph.Device's, so a *GPU can be passed wherever a graph.Device is wanted.
type GPU struct {
	dev *Device
	mu  sync.Mutex // one batch at a time, even from several graphs
	q   *commandQueue
	r   *runner
}

// NewGPU makes a graph device on the system's default Metal device, with its
// own command queue and pipeline cache. Without a device, or with one Accept
// refuses, the error wraps ErrUnavailable. The first NewGPU of a process starts
// compiling every kernel family in the background and returns without waiting:
// a dispatch waits for its own family only, and Ready waits for all of them (a
// family that does not compile refuses the device there).
func NewGPU(opt GPUOptions) (*GPU, error) {
	if _, err := opt.withDefaults(); err != nil {
		return nil, err
	}
	dev, err := Open()
	if err != nil {
		return nil, err
	}
	// The checks and every family's compile run once a process (see Accept).
	dev.acceptOnce.Do(func() {
		if dev.acceptErr = Accept(darwinProbe{dev}); dev.acceptErr == nil {
			dev.builds = startBuilds(Families(), runtime.NumCPU(), dev.compile)
		}
	})
	if dev.acceptErr != nil {
		return nil, dev.acceptErr
	}
	opt, err = opt.forChip(dev.arch).withDefaults()
	if err != nil {
		return nil, err
	}
	q := &commandQueue{dev: dev}
	q.queue = objc.Call[metal.CommandQueueWrapper](dev.mtl, selNewCommandQueue)
	if q.queue.IsNil() {
		return nil, fmt.Errorf("%w: %s made no command queue", ErrUnavailable, dev.Name())
	}
	q.fence = objc.Call[metal.FenceWrapper](dev.mtl, selNewFence)
	if q.fence.IsNil() {
		q.queue.Release()
		return nil, fmt.Errorf("%w: %s made no fence", ErrUnavailable, dev.Name())
	}
	r := newRunner(q, opt)
	r.cache.builds = dev.builds
	return &GPU{dev: dev, q: q, r: r}, nil
}

// MapHost binds b, a weight's bytes of dtype dt within mapping (the page-aligned mapping of its
// file), in place: the first tensor of a file wraps the mapping in one no-copy buffer
// (newBufferWithBytesNoCopy; a window of it for a file larger than the device's
// largest buffer), and each tensor is bound at its offset there (graph.HostMapper).
// done ends the use; the window's buffer is released with its last tensor, before the
// mapping may go. ok is false when b must be copied (see hostMaps.adopt).
func (g *GPU) MapHost(dt kernels.DType, b, mapping []byte) (done func(), ok bool) {
	done, _, ok = g.dev.host.adopt(dt, b, mapping)
	return done, ok
}

// Ready blocks until every kernel family has compiled and is nil when all did; else
// it refuses the device as NewGPU would have (wrapping ErrUnavailable and the first
// failing family's *CompileError, in family order). Call it before the first token:
// a run that skips it finds a broken family at that family's first dispatch instead
// (a *KernelError from Run).
func (g *GPU) Ready() error { return readyError(g.dev.name, g.dev.builds) }

// Name is "metal".
func (g *GPU) Name() string { return "metal" }

// Provider makes the device's buffers (the Device's provider, shared by every
// GPU of the process).
func (g *GPU) Provider() alloc.Provider { return g.dev.Provider() }

// Device is the Metal device the GPU runs on.
func (g *GPU) Device() *Device { return g.dev }

// ResourceLimit is the device's buffer-object limit: the iogpu.rsrc_limit sysctl, or
// 499000 when the system does not provide it (graph.New uses it as the default).
func (g *GPU) ResourceLimit() int { return g.dev.ResourceLimit() }

// Run encodes the batch's launches in order, committing a command buffer
// (without waiting) every CommitEvery dispatches or CommitBytes bytes of bound
// arguments and at the end, then waits once, for all of them: the GPU runs one
// command buffer while the next is encoded, and Run returns when the batch has
// completed. Every argument must be the contents of a buffer from
// Provider. The first launch that cannot be encoded ends the batch with a
// *KernelError; a command buffer the GPU fails is reported with the kernels
// it held.
func (g *GPU) Run(batch []kernels.Launch) (err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	// The pool must be drained on the thread that pushed it.
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	objc.WithAutoreleasePool(func() {
		// runBatch recovers panics: one must not unwind through the pool's C frame.
		err = g.r.runBatch(batch)
	})
	return err
}

// Submit encodes the batch's launches and commits their command buffers as Run does,
// but returns without waiting (graph.Submitter, which the graph's executor uses to
// encode the next batch while the GPU runs this one): done is closed once the batch
// has completed, and wait (called once, in submission order) returns what Run would
// have: the launch that could not be encoded, the command buffer the GPU failed, the
// kernel the device error word names.
func (g *GPU) Submit(batch []kernels.Launch) (done <-chan struct{}, wait func() error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return submitOn(g.r, &g.mu, batch, func(f func()) {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		objc.WithAutoreleasePool(f)
	})
}

// commandQueue is the darwin backend: one MTLCommandQueue and the command
// buffer being encoded. Its buffers are untracked, so Metal orders nothing
// between command buffers; a single fence does: each compute pass waits for
// the previous one's update. Within a pass the encoder is serial, so each
// dispatch sees the writes of the ones before it.
type commandQueue struct {
	dev    *Device
	queue  metal.CommandQueueWrapper
	fence  metal.FenceWrapper
	fenced bool // some pass has updated the fence (waiting on a fresh one is not defined)
	cb     metal.CommandBufferWrapper
	enc    metal.ComputeCommandEncoderWrapper
	// The committed command buffers not waited for, retained (a batch's outlive the
	// autorelease pool of the Submit that made them), oldest first: committed[i] is
	// number base+i (backend.wait).
	committed []metal.CommandBufferWrapper
	base      int
}

// nsErrorText is the description of an NSError returned through an error:
// argument, or fallback when there is none.
func nsErrorText(p unsafe.Pointer, fallback string) string {
	if p == nil {
		return fallback
	}
	return foundation.ErrorFrom(p).LocalizedDescription()
}

func (q *commandQueue) newLibrary(family, source string) (library, error) {
	return q.dev.compile(family, source)
}

// responds is [obj respondsToSelector:sel], through objc's cgo call: objc.Call[bool]
// would let libffi write a whole 8-byte register into a 1-byte Go bool (darwincheck
// refuses such calls).
func responds(obj objc.Object, sel string) bool { return obj.RespondsToSelector(objc.Sel(sel)) }

// compile compiles a family's MSL. It may run on any goroutine (NewGPU compiles the
// families concurrently, in the background): it drains its own autorelease pool on a locked thread.
func (d *Device) compile(family, source string) (lib library, err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	objc.WithAutoreleasePool(func() {
		opts := metal.CompileOptions_Alloc().Init()
		defer opts.Release()
		// MSL 3.1 (bfloat), pinned: the default follows the OS, and Accept has
		// checked that this one has it.
		opts.SetLanguageVersion(languageVersion3_1)
		// Fast math may reassociate, approximate and assume no NaN or infinity: the
		// twins must agree with the Go ones, NaN included, so it is off and the math
		// functions are the precise ones (as MLX compiles its kernels).
		for _, s := range preciseMath(responds(opts.Object, mathModeSelector), responds(opts.Object, mathFuncsSelector)) {
			objc.Call[objc.Void](opts, objc.Sel(s.selector), s.value)
		}
		var nsErr unsafe.Pointer
		mtl := objc.Call[metal.LibraryWrapper](d.mtl, selNewLibrary, source, opts.Ptr(), unsafe.Pointer(&nsErr))
		if mtl.IsNil() { // an error with a library holds only warnings
			err = errors.New(nsErrorText(nsErr, "the compiler returned no library and no error"))
			return
		}
		lib = &mtlLibrary{dev: d, mtl: mtl}
	})
	return lib, err
}

// mtlLibrary is a compiled family, kept for the life of the process.
type mtlLibrary struct {
	dev *Device
	mtl metal.LibraryWrapper
}

func (l *mtlLibrary) newPipeline(entry string) (pipeline, error) {
	fn := objc.Call[metal.FunctionWrapper](l.mtl, selNewFunction, entry)
	if fn.IsNil() {
		names := l.mtl.FunctionNames()
		sort.Strings(names)
		return nil, fmt.Errorf("no function named %s (it has %s)", entry, strings.Join(names, ", "))
	}
	defer fn.Release() // the pipeline keeps what it needs
	var nsErr unsafe.Pointer
	pso := objc.Call[metal.ComputePipelineStateWrapper](l.dev.mtl, selNewPipeline, fn.Ptr(), unsafe.Pointer(&nsErr))
	if pso.IsNil() {
		return nil, errors.New(nsErrorText(nsErr, "no pipeline and no error"))
	}
	return &mtlPipeline{mtl: pso, max: int(pso.MaxTotalThreadsPerThreadgroup())}, nil
}

// mtlPipeline is a compute pipeline state, kept for the life of the process.
type mtlPipeline struct {
	mtl metal.ComputePipelineStateWrapper
	max int
}

func (p *mtlPipeline) maxThreads() int { return p.max }

func (q *commandQueue) buffer(base *byte) (deviceBuffer, int, int, bool) {
	if b, ok := q.dev.provider.lookup(base); ok {
		return b, 0, b.size(), true
	}
	return q.dev.host.lookup(base)
}

// errorWord makes an error word: an MTLBuffer of its own, made by the device
// directly, so the provider's count (which the allocator's must equal) does not
// include it. The runner keeps it for the queue's life.
func (q *commandQueue) errorWord() (deviceBuffer, []byte, error) {
	mtl := objc.Call[metal.BufferWrapper](q.dev.mtl, selNewBuffer, uint(kernels.ErrorWordSize), bufferOptions)
	if mtl.IsNil() {
		return nil, nil, fmt.Errorf("metal: the device refused a buffer of %d bytes", kernels.ErrorWordSize)
	}
	ptr := mtl.Contents()
	if ptr == nil {
		mtl.Release()
		return nil, nil, fmt.Errorf("metal: the error word has no CPU-visible contents")
	}
	w := &buffer{mtl: mtl, data: unsafe.Slice((*byte)(ptr), kernels.ErrorWordSize)}
	return w, w.data, nil
}

// scratch makes a scratch buffer (see backend.scratch): made by the device directly,
// as the error word, and released by releaseScratch once the runner knows no batch
// in flight uses it.
func (q *commandQueue) scratch(n int) (deviceBuffer, error) {
	mtl := objc.Call[metal.BufferWrapper](q.dev.mtl, selNewBuffer, uint(n), bufferOptions)
	if mtl.IsNil() {
		return nil, fmt.Errorf("metal: the device refused a scratch buffer of %d bytes", n)
	}
	return &buffer{mtl: mtl, data: unsafe.Slice((*byte)(mtl.Contents()), n)}, nil
}

func (q *commandQueue) releaseScratch(b deviceBuffer) { b.(*buffer).mtl.Release() }

// size is the buffer's length in bytes.
func (b *buffer) size() int { return len(b.data) }

// open starts a command buffer and its compute pass if none is open.
func (q *commandQueue) open() {
	if !q.enc.IsNil() {
		return
	}
	q.cb = objc.Call[metal.CommandBufferWrapper](q.queue, selCommandBuffer)
	if q.cb.IsNil() {
		panic("metal: the command queue gave no command buffer")
	}
	q.enc = objc.Call[metal.ComputeCommandEncoderWrapper](q.cb, selComputeEncoder)
	if q.enc.IsNil() {
		panic("metal: the command buffer gave no compute encoder")
	}
	if q.fenced {
		objc.Call[objc.Void](q.enc, selWaitForFence, q.fence.Ptr())
	}
}

func (q *commandQueue) setPipeline(p pipeline) {
	q.open()
	encSetPipeline(q.enc.Ptr(), p.(*mtlPipeline).mtl.Ptr())
}

func (q *commandQueue) setBuffer(index int, b deviceBuffer, offset int) {
	q.open()
	var ptr unsafe.Pointer
	if b != nil {
		ptr = b.(*buffer).mtl.Ptr()
	}
	encSetBuffer(q.enc.Ptr(), ptr, offset, index)
}

func (q *commandQueue) setBytes(index int, b []byte) {
	q.open()
	encSetBytes(q.enc.Ptr(), b, index)
}

func (q *commandQueue) barrier() {
	q.open()
	encBarrier(q.enc.Ptr())
}

func (q *commandQueue) dispatch(kind dispatchKind, size, group [3]int) {
	q.open()
	encDispatch(q.enc.Ptr(), kind == dispatchThreadgroups, size, group)
}

func (q *commandQueue) commit() bool {
	if q.enc.IsNil() {
		return false
	}
	objc.Call[objc.Void](q.enc, selUpdateFence, q.fence.Ptr())
	objc.Call[objc.Void](q.enc, selEndEncoding)
	q.cb.Commit()
	q.fenced = true
	q.cb.Retain() // released by wait or reset
	q.committed = append(q.committed, q.cb)
	q.cb, q.enc = metal.CommandBufferWrapper{}, metal.ComputeCommandEncoderWrapper{}
	return true
}

// reset abandons a batch that broke down (see backend.reset): the open pass
// is ended uncommitted (Metal asserts on an encoder freed mid-pass), and the
// committed command buffers are waited for before they are forgotten, since
// the buffers they use are untracked and about to be reused.
func (q *commandQueue) reset() {
	if !q.enc.IsNil() {
		objc.Call[objc.Void](q.enc, selEndEncoding)
	}
	q.cb, q.enc = metal.CommandBufferWrapper{}, metal.ComputeCommandEncoderWrapper{}
	for _, cb := range q.committed {
		cb.WaitUntilCompleted()
		cb.Release()
	}
	q.base += len(q.committed)
	clear(q.committed)
	q.committed = q.committed[:0]
}

// wait waits for the command buffers numbered below upTo (see backend.wait), in
// order, and releases them.
func (q *commandQueue) wait(upTo int) (int, error) {
	failed, err := -1, error(nil)
	n := min(max(upTo-q.base, 0), len(q.committed))
	for i, cb := range q.committed[:n] {
		cb.WaitUntilCompleted()
		if st := cb.Status(); st != metal.CommandBufferStatusCompleted && failed < 0 {
			failed = q.base + i
			msg := fmt.Sprintf("status %d", st)
			if e := cb.Error(); !e.IsNil() {
				msg = e.LocalizedDescription()
			}
			err = errors.New(msg)
		}
		cb.Release()
	}
	q.committed = append(q.committed[:0], q.committed[n:]...)
	q.base += n
	return failed, err
}

// completed is closed once the command buffers numbered below upTo have completed: a
// goroutine waits for them (waitUntilCompleted, which Metal allows from any thread),
// each retained for it. It stands for addCompletedHandler:, whose block macdriver
// would have to call back into Go on Metal's completion thread.
func (q *commandQueue) completed(upTo int) <-chan struct{} {
	n := min(max(upTo-q.base, 0), len(q.committed))
	cbs := make([]metal.CommandBufferWrapper, n)
	for i, cb := range q.committed[:n] {
		cb.Retain()
		cbs[i] = cb
	}
	ch := make(chan struct{})
	go func() {
		defer close(ch)
		for _, cb := range cbs {
			cb.WaitUntilCompleted()
			cb.Release()
		}
	}()
	return ch
}
