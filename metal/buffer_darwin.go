//go:build darwin

package metal

import (
	"fmt"
	"sync"
	"unsafe"

	"github.com/ingotml/ingot/alloc"
	"github.com/progrium/macdriver/macos/metal"
	"github.com/progrium/macdriver/objc"
)

// bufferOptions gives unified memory the CPU can read and write, with hazards
// left to the engine, which orders its own command buffers.
const bufferOptions = metal.ResourceStorageModeShared | metal.ResourceHazardTrackingModeUntracked

// The generated "new..." wrappers autorelease their result, which would tie
// each buffer's life to an autorelease pool; sending the messages directly
// returns objects we own (+1) and release exactly once.
var (
	selNewBuffer       = objc.Sel("newBufferWithLength:options:")
	selNewBufferNoCopy = objc.Sel("newBufferWithBytesNoCopy:length:options:deallocator:")
	selNewHeap         = objc.Sel("newHeapWithDescriptor:")
)

// bufferProvider is the device's alloc.Provider. Its counts are of objects it
// created and has not released; the allocator's count must equal its buffers.
type bufferProvider struct {
	dev *Device

	mu     sync.Mutex
	policy heapPolicy        // where each buffer comes from (heap.go)
	heap   metal.HeapWrapper // the one small-buffer heap, once made; kept for the process's life
	// byBase finds the MTLBuffer behind a kernel argument: arguments carry
	// only the contents (shared storage), whose first byte is unique to a
	// live buffer.
	byBase map[*byte]*buffer
}

// buffer is one MTLBuffer; it implements alloc.Raw.
type buffer struct {
	p    *bufferProvider
	mtl  metal.BufferWrapper
	src  source // the small heap or the device
	data []byte
}

// Name identifies the device for the allocator's messages.
func (p *bufferProvider) Name() string { return "metal" }

// MaxBufferLength is the device's maxBufferLength.
func (p *bufferProvider) MaxBufferLength() int64 { return p.dev.maxBuffer }

// RecommendedWorkingSet is the device's recommendedMaxWorkingSetSize.
func (p *bufferProvider) RecommendedWorkingSet() int64 { return p.dev.workingSet }

// Alloc makes one shared-storage MTLBuffer of exactly n bytes: from the small
// heap when n < 256 and the heap has room, otherwise from the device.
func (p *bufferProvider) Alloc(n int) (alloc.Raw, error) {
	if n <= 0 {
		return nil, fmt.Errorf("metal: buffer of %d bytes: size must be positive", n)
	}
	if int64(n) > p.dev.maxBuffer {
		return nil, fmt.Errorf("metal: buffer of %d bytes: larger than the device's maximum of %d bytes", n, p.dev.maxBuffer)
	}
	p.mu.Lock()
	defer p.mu.Unlock()

	// Creation may autorelease temporaries; over hundreds of thousands of
	// buffers, on threads with no pool, they would pile up, so each call
	// drains its own pool (as MLX does).
	var (
		mtl metal.BufferWrapper
		src source
		ok  bool
	)
	objc.WithAutoreleasePool(func() {
		src, ok = p.policy.place(n,
			p.newHeapLocked,
			func() bool {
				mtl = objc.Call[metal.BufferWrapper](p.heap, selNewBuffer, uint(n), bufferOptions)
				return !mtl.IsNil()
			},
			func() bool {
				mtl = objc.Call[metal.BufferWrapper](p.dev.mtl, selNewBuffer, uint(n), bufferOptions)
				return !mtl.IsNil()
			})
	})
	if !ok {
		return nil, fmt.Errorf("metal: the device refused a buffer of %d bytes", n)
	}
	b := &buffer{p: p, mtl: mtl, src: src}

	ptr := b.mtl.Contents()
	if ptr == nil { // cannot happen with shared storage; never hand out a nil view
		b.releaseLocked()
		return nil, fmt.Errorf("metal: buffer of %d bytes has no CPU-visible contents", n)
	}
	b.data = unsafe.Slice((*byte)(ptr), n)
	if p.byBase == nil {
		p.byBase = map[*byte]*buffer{}
	}
	p.byBase[&b.data[0]] = b
	return b, nil
}

// lookup returns the live buffer whose contents start at base.
func (p *bufferProvider) lookup(base *byte) (*buffer, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	b, ok := p.byBase[base]
	return b, ok
}

// newHeapLocked makes the small-buffer heap (MLX's size and options); it
// reports false when the device refuses it.
func (p *bufferProvider) newHeapLocked() bool {
	desc := metal.HeapDescriptor_Alloc().Init()
	defer desc.Release()
	desc.SetSize(smallHeapSize)
	desc.SetResourceOptions(bufferOptions)
	p.heap = objc.Call[metal.HeapWrapper](p.dev.mtl, selNewHeap, objc.Ptr(desc))
	return !p.heap.IsNil()
}

// counts returns the live MTLBuffers and MTLHeaps the provider made.
func (p *bufferProvider) counts() (buffers, heaps int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.policy.buffers(), p.policy.heaps()
}

// heapBytes is the size of the small heap, 0 before it is made.
func (p *bufferProvider) heapBytes() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.policy.heapBytes()
}

// Bytes is the buffer's contents: CPU-visible memory the GPU shares.
func (b *buffer) Bytes() []byte { return b.data }

// Release releases the MTLBuffer (a heap's space returns to the heap). Calls
// after the first do nothing.
func (b *buffer) Release() {
	b.p.mu.Lock()
	defer b.p.mu.Unlock()
	objc.WithAutoreleasePool(b.releaseLocked) // see Alloc
}

func (b *buffer) releaseLocked() {
	if b.mtl.IsNil() {
		return
	}
	b.mtl.Release()
	b.mtl = metal.BufferWrapper{}
	if len(b.data) > 0 {
		delete(b.p.byBase, &b.data[0])
	}
	b.data = nil
	b.p.policy.released(b.src)
}

// wrapNoCopy is hostMaps.wrap on a Mac: an MTLBuffer over [p, p+n) of a mapped file,
// without a copy (p and n page-aligned, as planWindow makes them), with no deallocator:
// the mapping belongs to the checkpoint, which unmaps it only after hostMaps has
// released this buffer. It is outside the provider's books, as the error word is.
func (d *Device) wrapNoCopy(p unsafe.Pointer, n int) (deviceBuffer, error) {
	var mtl metal.BufferWrapper
	objc.WithAutoreleasePool(func() {
		mtl = objc.Call[metal.BufferWrapper](d.mtl, selNewBufferNoCopy, p, uint(n), bufferOptions, unsafe.Pointer(nil))
	})
	if mtl.IsNil() {
		return nil, fmt.Errorf("metal: the device refused a no-copy buffer of %d bytes", n)
	}
	return &buffer{mtl: mtl, data: unsafe.Slice((*byte)(p), n)}, nil
}

// releaseWrapped releases a buffer wrapNoCopy made.
func releaseWrapped(b deviceBuffer) {
	objc.WithAutoreleasePool(func() { b.(*buffer).mtl.Release() })
}
