package alloc_test

import (
	"errors"
	"testing"

	"github.com/ingotml/ingot/alloc"
)

func TestLimitReachedAfterExactlyLimitMisses(t *testing.T) {
	p := newFake()
	a := alloc.New(p, alloc.Config{ResourceLimit: 100})
	for i := range 100 {
		mustMalloc(t, a, 4)
		eq(t, a.ActiveBufferCount(), i+1, "count")
	}
	counts(t, a, 100, 0)
	eq(t, p.numAllocs(), 100, "device allocs")

	b, err := a.Malloc(4)
	if !b.IsNil() {
		t.Fatalf("got a buffer past the limit")
	}
	eq(t, err.Error(), "[metal::malloc] Resource limit (100) exceeded.", "error")
	var rle *alloc.ResourceLimitError
	if !errors.As(err, &rle) {
		t.Fatalf("error %T is not *ResourceLimitError", err)
	}
	eq(t, rle.Limit, 100, "Limit")
	counts(t, a, 100, 0)
	eq(t, p.numAllocs(), 100, "device allocs after failure")
	eq(t, len(p.releasedIDs()), 0, "releases after failure")
	eq(t, a.ActiveMemory(), int64(400), "active memory after failure")
	checkClean(t, p)
}

func TestDefaultLimitMessage(t *testing.T) {
	eq(t, (&alloc.ResourceLimitError{Limit: 499000}).Error(),
		"[metal::malloc] Resource limit (499000) exceeded.", "message")
}

func TestLimitMissDropsWholeCacheFirst(t *testing.T) {
	p := newFake()
	a := alloc.New(p, alloc.Config{ResourceLimit: 100})
	held := make([]alloc.Buffer, 100)
	for i := range held {
		held[i] = mustMalloc(t, a, 4)
	}
	for _, b := range held[:10] {
		a.Free(b)
	}
	counts(t, a, 100, 10)
	eq(t, len(p.releasedIDs()), 0, "releases before the miss")

	// 16 bytes cannot reuse a 4-byte buffer: a miss at the limit. Memory is
	// nowhere near the gc limit, yet the wrapped byte target drops it all.
	b := mustMalloc(t, a, 16)
	eq(t, b.Len(), 16, "Len")
	counts(t, a, 91, 0)
	eq(t, len(p.releasedIDs()), 10, "cached buffers released")
	eq(t, a.CacheMemory(), int64(0), "cache memory")
	eq(t, p.numAllocs(), 101, "device allocs")
	checkClean(t, p)
}

func TestHitAtLimitChecksNothing(t *testing.T) {
	p := newFake()
	a := alloc.New(p, alloc.Config{ResourceLimit: 3})
	x := mustMalloc(t, a, 4)
	mustMalloc(t, a, 4)
	mustMalloc(t, a, 4)
	a.Free(x)
	counts(t, a, 3, 1)
	got := mustMalloc(t, a, 4)
	if got.Raw() != x.Raw() {
		t.Fatalf("hit did not hand back the cached buffer")
	}
	counts(t, a, 3, 0)
	eq(t, p.numAllocs(), 3, "device allocs")
}

func TestReclaimerFreesAndMallocSucceeds(t *testing.T) {
	p := newFake()
	a := alloc.New(p, alloc.Config{ResourceLimit: 10})
	held := make([]alloc.Buffer, 10)
	for i := range held {
		held[i] = mustMalloc(t, a, 4)
	}
	calls := 0
	a.SetReclaimer(func() {
		calls++
		// Runs without the allocator's lock: these would deadlock otherwise.
		eq(t, a.LiveBufferCount(), 10, "live count seen by reclaimer")
		for _, b := range held[:3] {
			a.Free(b)
		}
	})
	b := mustMalloc(t, a, 4)
	eq(t, calls, 1, "reclaimer calls")
	eq(t, b.Len(), 4, "Len")
	// The three went to the cache, the second purge dropped them, one new.
	counts(t, a, 8, 0)
	eq(t, len(p.releasedIDs()), 3, "releases")
	eq(t, p.numAllocs(), 11, "device allocs")
	checkClean(t, p)
}

func TestReclaimerFreesNothingMallocFails(t *testing.T) {
	p := newFake()
	a := alloc.New(p, alloc.Config{ResourceLimit: 10})
	for range 10 {
		mustMalloc(t, a, 4)
	}
	calls := 0
	a.SetReclaimer(func() { calls++ })
	_, err := a.Malloc(4)
	eq(t, calls, 1, "reclaimer calls")
	eq(t, err.Error(), "[metal::malloc] Resource limit (10) exceeded.", "error")
	counts(t, a, 10, 0)
	eq(t, p.numAllocs(), 10, "device allocs")
}

func TestReclaimerNotCalledWhenPurgeSuffices(t *testing.T) {
	p := newFake()
	a := alloc.New(p, alloc.Config{ResourceLimit: 10})
	held := make([]alloc.Buffer, 10)
	for i := range held {
		held[i] = mustMalloc(t, a, 4)
	}
	calls := 0
	a.SetReclaimer(func() { calls++ })
	a.Free(held[0])
	a.Free(held[1])
	mustMalloc(t, a, 16) // miss; the purge frees two slots
	eq(t, calls, 0, "reclaimer calls")
	counts(t, a, 9, 0)

	a.SetReclaimer(nil)
	mustMalloc(t, a, 16)
	_, err := a.Malloc(16)
	var rle *alloc.ResourceLimitError
	if !errors.As(err, &rle) {
		t.Fatalf("want *ResourceLimitError with no reclaimer, got %v", err)
	}
	eq(t, calls, 0, "reclaimer calls after removal")
}

func TestDeviceError(t *testing.T) {
	p := newFake()
	p.fail = errRefused
	a := alloc.New(p, alloc.Config{})
	calls := 0
	a.SetReclaimer(func() { calls++ })
	_, err := a.Malloc(16385)
	eq(t, err.Error(), "[malloc] Unable to allocate 32768 bytes.", "error")
	var de *alloc.DeviceError
	if !errors.As(err, &de) {
		t.Fatalf("error %T is not *DeviceError", err)
	}
	eq(t, de.Size, int64(32768), "Size")
	if !errors.Is(err, errRefused) {
		t.Fatalf("DeviceError does not unwrap to the provider's error")
	}
	eq(t, calls, 0, "reclaimer calls on a device refusal")
	counts(t, a, 0, 0)
	eq(t, a.ActiveMemory(), int64(0), "active memory")
	eq(t, a.PeakMemory(), int64(0), "peak memory")
}

func TestShortDeviceBufferRejected(t *testing.T) {
	p := newFake()
	p.short = true
	a := alloc.New(p, alloc.Config{})
	_, err := a.Malloc(8)
	eq(t, err.Error(), "[malloc] Unable to allocate 8 bytes.", "error")
	var de *alloc.DeviceError
	if !errors.As(err, &de) || de.Err == nil {
		t.Fatalf("want *DeviceError with a cause, got %v", err)
	}
	counts(t, a, 0, 0)
	eq(t, p.liveCount(), 0, "device objects left")
}

func TestMaxBufferError(t *testing.T) {
	p := newFake()
	a := alloc.New(p, alloc.Config{MaxBufferLength: 1000})
	mustMalloc(t, a, 1000)
	_, err := a.Malloc(1001)
	eq(t, err.Error(), "[metal::malloc] Attempting to allocate 1001 bytes which is greater than the maximum allowed buffer size of 1000 bytes.", "error")
	var mbe *alloc.MaxBufferError
	if !errors.As(err, &mbe) {
		t.Fatalf("error %T is not *MaxBufferError", err)
	}
	eq(t, *mbe, alloc.MaxBufferError{Size: 1001, Max: 1000}, "fields")
	counts(t, a, 1, 0)
	eq(t, p.numAllocs(), 1, "device allocs")

	// The provider's figure is the default.
	p.maxBuf = 64
	_, err = alloc.New(p, alloc.Config{}).Malloc(65)
	eq(t, err.Error(), "[metal::malloc] Attempting to allocate 65 bytes which is greater than the maximum allowed buffer size of 64 bytes.", "default max")
}

func TestSizeZeroAndNegative(t *testing.T) {
	p := newFake()
	a := alloc.New(p, alloc.Config{})
	b, err := a.Malloc(0)
	if !b.IsNil() || err != nil {
		t.Fatalf("Malloc(0) = %v, %v; want nil, nil", b, err)
	}
	eq(t, b.Len(), 0, "nil Len")
	eq(t, len(b.Bytes()), 0, "nil Bytes")
	a.Free(b) // no-op
	counts(t, a, 0, 0)
	eq(t, p.numAllocs(), 0, "device allocs")

	_, err = a.Malloc(-1)
	if !errors.Is(err, alloc.ErrNegativeSize) {
		t.Fatalf("Malloc(-1) error %v, want ErrNegativeSize", err)
	}
	counts(t, a, 0, 0)
}
