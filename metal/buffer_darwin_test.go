//go:build darwin

package metal

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/ingotml/ingot/alloc"
	"github.com/progrium/macdriver/macos/metal"
	"github.com/progrium/macdriver/objc"
)

// The provider is shared by the whole process, so these tests compare its
// counts with the figures they read at their start.

func TestProviderMakesSharedBuffers(t *testing.T) {
	d := openOrSkip(t)
	p := d.provider
	buffers0, _ := p.counts()

	sizes := []int{1, 4, 255, 256, 4096, 3 * 16384}
	raws := make([]*buffer, len(sizes))
	for i, n := range sizes {
		r, err := p.Alloc(n)
		if err != nil {
			t.Fatalf("Alloc(%d): %v", n, err)
		}
		b := r.(*buffer)
		raws[i] = b
		if len(b.Bytes()) != n || cap(b.Bytes()) != n {
			t.Fatalf("Alloc(%d): Bytes has len %d cap %d", n, len(b.Bytes()), cap(b.Bytes()))
		}
		if got := b.mtl.Length(); got != uint(n) {
			t.Fatalf("Alloc(%d): MTLBuffer length %d", n, got)
		}
		res := metal.ResourceWrapper{Object: b.mtl.Object}
		if res.StorageMode() != metal.StorageModeShared || res.HazardTrackingMode() != metal.HazardTrackingModeUntracked {
			t.Fatalf("Alloc(%d): storage mode %d, hazard tracking %d; want shared, untracked",
				n, res.StorageMode(), res.HazardTrackingMode())
		}
		var heapPtr objc.Object
		objc.WithAutoreleasePool(func() { heapPtr = res.Heap().Object })
		// A fresh heap has room for these few small buffers.
		if small := n < smallBufferLimit && p.dev.heaps; small != (b.src == fromHeap) || small != !heapPtr.IsNil() {
			t.Fatalf("Alloc(%d): from a heap: provider says %v, Metal says %v", n, b.src == fromHeap, !heapPtr.IsNil())
		}
		if b.src == fromHeap && heapPtr.Ptr() != p.heap.Ptr() {
			t.Fatalf("Alloc(%d): buffer is in heap %p, provider's is %p", n, heapPtr.Ptr(), p.heap.Ptr())
		}
		for j := range b.Bytes() {
			b.Bytes()[j] = byte(i*31 + j)
		}
		if got, _ := p.counts(); got != buffers0+i+1 {
			t.Fatalf("after %d allocations the provider counts %d live buffers, want %d", i+1, got-buffers0, i+1)
		}
	}
	// Read back only after every write, so overlapping memory would show.
	for i, b := range raws {
		for j, v := range b.Bytes() {
			if v != byte(i*31+j) {
				t.Fatalf("buffer %d (%d bytes) byte %d = %d, want %d", i, sizes[i], j, v, byte(i*31+j))
			}
		}
	}
	for i, b := range raws {
		b.Release()
		if got, _ := p.counts(); got != buffers0+len(raws)-i-1 {
			t.Fatalf("after %d releases the provider counts %d live buffers, want %d", i+1, got-buffers0, len(raws)-i-1)
		}
		if b.Bytes() != nil {
			t.Fatal("a released buffer still has contents")
		}
	}
	raws[0].Release() // a second release must not touch the device or the counts
	if got, _ := p.counts(); got != buffers0 {
		t.Fatalf("a double release changed the count to %d, want %d", got, buffers0)
	}
}

func TestProviderRejectsBadSizes(t *testing.T) {
	d := openOrSkip(t)
	for n, want := range map[int]string{
		0:  "metal: buffer of 0 bytes: size must be positive",
		-4: "metal: buffer of -4 bytes: size must be positive",
	} {
		if _, err := d.provider.Alloc(n); err == nil || err.Error() != want {
			t.Errorf("Alloc(%d) error = %v, want %q", n, err, want)
		}
	}
	n := int(d.MaxBufferLength()) + 1
	if _, err := d.provider.Alloc(n); err == nil {
		t.Errorf("Alloc(%d) above the device maximum succeeded", n)
	}
}

// TestProviderFallsBackWhenHeapFull: once the one heap refuses a small buffer,
// small buffers come from the device, and no second heap is made.
func TestProviderFallsBackWhenHeapFull(t *testing.T) {
	d := openOrSkip(t)
	if !d.heaps {
		t.Skipf("%s: no heaps on this device", d.Name())
	}
	p := d.provider
	buffers0, _ := p.counts()

	const size = 128
	var bufs []*buffer
	// A 1 MiB heap holds at most 8192 buffers of 128 bytes; go a little past.
	for len(bufs) < smallHeapSize/size+100 {
		r, err := p.Alloc(size)
		if err != nil {
			t.Fatalf("small buffer %d: %v", len(bufs), err)
		}
		bufs = append(bufs, r.(*buffer))
	}
	inHeap := 0
	for _, b := range bufs {
		if b.src == fromHeap {
			inHeap++
		}
	}
	if inHeap == len(bufs) || bufs[len(bufs)-1].src != fromDevice {
		t.Fatalf("%d of %d buffers of %d bytes came from one %d-byte heap; want the last from the device",
			inHeap, len(bufs), size, smallHeapSize)
	}
	t.Logf("the heap held %d buffers of %d bytes", inHeap, size)
	buffers, heaps := p.counts()
	if buffers-buffers0 != len(bufs) || heaps != 1 || d.SmallHeapBytes() != smallHeapSize {
		t.Fatalf("provider counts %d live buffers (want %d, one per buffer), %d heaps of %d bytes (want 1 of %d)",
			buffers-buffers0, len(bufs), heaps, d.SmallHeapBytes(), smallHeapSize)
	}

	for i, b := range bufs {
		binary.LittleEndian.PutUint32(b.Bytes(), uint32(i))
	}
	for i, b := range bufs {
		if got := binary.LittleEndian.Uint32(b.Bytes()); got != uint32(i) {
			t.Fatalf("buffer %d reads %d: buffers overlap", i, got)
		}
	}
	for _, b := range bufs {
		b.Release()
	}
	buffers, heaps = p.counts()
	if buffers != buffers0 || heaps != 1 {
		t.Fatalf("after release: %d buffers (want %d), %d heaps (want 1: kept)", buffers, buffers0, heaps)
	}
}

func TestAllocatorCountsLiveMTLBuffers(t *testing.T) {
	d := openOrSkip(t)
	p := d.provider
	buffers0, _ := p.counts()
	a := alloc.New(d.Provider(), alloc.Config{})
	same := func(step string) {
		t.Helper()
		buffers, _ := p.counts()
		if got := a.ActiveBufferCount(); got != buffers-buffers0 {
			t.Fatalf("%s: allocator counts %d buffer objects, the provider made %d live MTLBuffers",
				step, got, buffers-buffers0)
		}
	}

	var bufs []alloc.Buffer
	for _, n := range []int{4, 4, 4, 100, 255, 256, 1000, 20000, 70000} {
		for range 10 {
			b, err := a.Malloc(n)
			if err != nil {
				t.Fatalf("Malloc(%d): %v", n, err)
			}
			b.Bytes()[0] = 1
			bufs = append(bufs, b)
		}
	}
	same("after 90 mallocs")
	if got := a.ActiveBufferCount(); got != 90 {
		t.Fatalf("ActiveBufferCount() = %d, want 90", got)
	}
	for _, b := range bufs[:45] {
		a.Free(b) // into the cache: still live MTLBuffers
	}
	same("after freeing 45 into the cache")
	for range 10 {
		b, err := a.Malloc(4) // cache hits
		if err != nil {
			t.Fatal(err)
		}
		bufs = append(bufs, b)
	}
	same("after 10 cache hits")
	a.ClearCache()
	same("after ClearCache")
	for _, b := range bufs[45:] {
		a.Free(b)
	}
	a.ClearCache()
	same("after freeing everything")
	if got := a.ActiveBufferCount(); got != 0 {
		t.Fatalf("ActiveBufferCount() = %d after freeing everything, want 0", got)
	}
}

func TestAllocatorResourceLimitOnMetal(t *testing.T) {
	d := openOrSkip(t)
	p := d.provider
	buffers0, _ := p.counts()
	a := alloc.New(d.Provider(), alloc.Config{ResourceLimit: 50})
	var bufs []alloc.Buffer
	defer func() {
		for _, b := range bufs {
			a.Free(b)
		}
		a.ClearCache()
	}()
	for range 50 {
		b, err := a.Malloc(4)
		if err != nil {
			t.Fatalf("malloc %d: %v", len(bufs)+1, err)
		}
		bufs = append(bufs, b)
	}
	_, err := a.Malloc(4)
	var limit *alloc.ResourceLimitError
	if !errors.As(err, &limit) || err.Error() != "[metal::malloc] Resource limit (50) exceeded." {
		t.Fatalf("malloc 51 error = %v, want the resource limit error", err)
	}
	if buffers, _ := p.counts(); buffers-buffers0 != 50 {
		t.Fatalf("provider has %d live MTLBuffers, want 50", buffers-buffers0)
	}
}
