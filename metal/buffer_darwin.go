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

const (
	// smallBufferLimit: requests below it are sub-allocated from a heap, as
	// MLX does, to spare the driver many tiny allocations.
	smallBufferLimit = 256
	// smallHeapSize is the size of each small-buffer heap (MLX's 1 MiB).
	smallHeapSize = 1 << 20
	// bufferOptions gives unified memory the CPU can read and write, with
	// hazards left to the engine, which orders its own command buffers.
	bufferOptions = metal.ResourceStorageModeShared | metal.ResourceHazardTrackingModeUntracked
)

// The generated "new..." wrappers autorelease their result, which would tie
// each buffer's life to an autorelease pool; sending the messages directly
// returns objects we own (+1) and release exactly once.
var (
	selNewBuffer = objc.Sel("newBufferWithLength:options:")
	selNewHeap   = objc.Sel("newHeapWithDescriptor:")
)

// bufferProvider is the device's alloc.Provider. Its counts are of objects it
// created and has not released; the allocator's count must equal liveBuffers.
type bufferProvider struct {
	dev *Device

	mu          sync.Mutex
	heap        *smallHeap // current small-buffer heap; nil until needed
	liveBuffers int        // MTLBuffers, from heaps or not
	liveHeaps   int        // the current heap plus full ones still in use
	// byBase finds the MTLBuffer behind a kernel argument: arguments carry
	// only the contents (shared storage), whose first byte is unique to a
	// live buffer.
	byBase map[*byte]*buffer
}

// smallHeap is one MTLHeap. A full heap is retired: no new buffers come from
// it, and it is released with its last buffer.
type smallHeap struct {
	mtl  metal.HeapWrapper
	live int // buffers from this heap not yet released
}

// buffer is one MTLBuffer; it implements alloc.Raw.
type buffer struct {
	p    *bufferProvider
	mtl  metal.BufferWrapper
	heap *smallHeap // nil for a buffer made by the device directly
	data []byte
}

// Name identifies the device for the allocator's messages.
func (p *bufferProvider) Name() string { return "metal" }

// MaxBufferLength is the device's maxBufferLength.
func (p *bufferProvider) MaxBufferLength() int64 { return p.dev.maxBuffer }

// RecommendedWorkingSet is the device's recommendedMaxWorkingSetSize.
func (p *bufferProvider) RecommendedWorkingSet() int64 { return p.dev.workingSet }

// Alloc makes one shared-storage MTLBuffer of exactly n bytes: from the
// current small heap when n < 256 (a new heap when it is full), otherwise
// from the device.
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
	var b *buffer
	objc.WithAutoreleasePool(func() {
		if n < smallBufferLimit && p.dev.heaps {
			b = p.newSmallLocked(n)
		}
		if b == nil { // large, no heaps on this device, or no heap could be made
			mtl := objc.Call[metal.BufferWrapper](p.dev.mtl, selNewBuffer, uint(n), bufferOptions)
			if !mtl.IsNil() {
				b = &buffer{p: p, mtl: mtl}
			}
		}
	})
	if b == nil {
		return nil, fmt.Errorf("metal: the device refused a buffer of %d bytes", n)
	}
	p.liveBuffers++

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

// newSmallLocked sub-allocates n bytes from the current heap, starting a new
// heap when it is full. It returns nil if no heap can be made, so that the
// caller falls back to a device buffer.
func (p *bufferProvider) newSmallLocked(n int) *buffer {
	if h := p.heap; h != nil {
		if b := h.newBuffer(p, n); b != nil {
			return b
		}
		p.heap = nil // full: retire it
		if h.live == 0 {
			p.releaseHeapLocked(h)
		}
	}
	h := p.newHeapLocked()
	if h == nil {
		return nil
	}
	p.heap = h
	return h.newBuffer(p, n)
}

func (p *bufferProvider) newHeapLocked() *smallHeap {
	desc := metal.HeapDescriptor_Alloc().Init()
	defer desc.Release()
	desc.SetSize(smallHeapSize)
	desc.SetResourceOptions(bufferOptions)
	mtl := objc.Call[metal.HeapWrapper](p.dev.mtl, selNewHeap, objc.Ptr(desc))
	if mtl.IsNil() {
		return nil
	}
	p.liveHeaps++
	return &smallHeap{mtl: mtl}
}

func (p *bufferProvider) releaseHeapLocked(h *smallHeap) {
	h.mtl.Release()
	h.mtl = metal.HeapWrapper{}
	p.liveHeaps--
}

// newBuffer returns nil when the heap has no room for n bytes.
func (h *smallHeap) newBuffer(p *bufferProvider, n int) *buffer {
	mtl := objc.Call[metal.BufferWrapper](h.mtl, selNewBuffer, uint(n), bufferOptions)
	if mtl.IsNil() {
		return nil
	}
	h.live++
	return &buffer{p: p, mtl: mtl, heap: h}
}

// counts returns the live MTLBuffers and MTLHeaps the provider made.
func (p *bufferProvider) counts() (buffers, heaps int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.liveBuffers, p.liveHeaps
}

// Bytes is the buffer's contents: CPU-visible memory the GPU shares.
func (b *buffer) Bytes() []byte { return b.data }

// Release releases the MTLBuffer (and its heap, if that was retired and this
// was its last buffer). Calls after the first do nothing.
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
	b.p.liveBuffers--
	if h := b.heap; h != nil {
		h.live--
		if h.live == 0 && h != b.p.heap {
			b.p.releaseHeapLocked(h)
		}
	}
}
