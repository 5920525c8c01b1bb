package alloc_test

import (
	"testing"

	"github.com/ingotml/ingot/alloc"
)

func TestActiveAndPeakMemory(t *testing.T) {
	p := newFake()
	a := alloc.New(p, alloc.Config{})
	x := mustMalloc(t, a, 100)
	y := mustMalloc(t, a, 200)
	eq(t, a.ActiveMemory(), int64(300), "active")
	eq(t, a.PeakMemory(), int64(300), "peak")
	a.Free(y)
	eq(t, a.ActiveMemory(), int64(100), "active after free")
	eq(t, a.PeakMemory(), int64(300), "peak after free")
	eq(t, a.CacheMemory(), int64(200), "cache after free")

	a.ResetPeakMemory()
	eq(t, a.PeakMemory(), int64(0), "peak after reset")
	mustMalloc(t, a, 50) // miss
	eq(t, a.PeakMemory(), int64(150), "peak after reset and malloc")

	// A hit counts the cached buffer's whole length, not the request.
	a.Free(x)
	seven := mustMalloc(t, a, 7)
	a.Free(seven)
	before := a.ActiveMemory()
	got := mustMalloc(t, a, 4)
	eq(t, got.Len(), 7, "hit length")
	eq(t, a.ActiveMemory(), before+7, "active after a 7-byte hit")
	eq(t, a.CacheMemory(), int64(300), "cache after hit")
}

// cachedXYZ makes an allocator with a gc limit of 1000 bytes, one live
// buffer of live bytes (if live > 0), and buffers of 500, 50 and 50 bytes
// cached, oldest first; it returns the cached buffers' ids. Requests above
// 500 or of at most 25 bytes miss this cache.
func cachedXYZ(t *testing.T, live int) (*alloc.Allocator, *fakeProvider, []int) {
	t.Helper()
	p := newFake()
	a := alloc.New(p, alloc.Config{GCLimit: 1000})
	eq(t, a.Stats().GCLimit, int64(1000), "gc limit")
	if live > 0 {
		mustMalloc(t, a, live)
	}
	var ids []int
	var bs []alloc.Buffer
	for _, n := range []int{500, 50, 50} {
		b := mustMalloc(t, a, n)
		bs = append(bs, b)
		ids = append(ids, id(t, b))
	}
	for _, b := range bs {
		a.Free(b)
	}
	eq(t, a.CacheMemory(), int64(600), "cache memory")
	return a, p, ids
}

func TestGCPressureRelease(t *testing.T) {
	for _, c := range []struct {
		name     string
		live     int
		size     int
		released []int // indexes into the cached buffers
	}{
		// need = live + 600 cached + size - 1000.
		{"below gc limit", 0, 20, nil},
		{"at gc limit, need 0: nothing", 380, 20, nil},
		{"need 1: one oldest buffer", 380, 21, []int{0}},
		{"need 200: oldest only", 0, 600, []int{0}},
		{"need 539 < 90% of 600: oldest first", 0, 939, []int{0, 1}},
		{"need 540 = 90% of 600: clear all", 0, 940, []int{0, 1, 2}},
	} {
		t.Run(c.name, func(t *testing.T) {
			a, p, ids := cachedXYZ(t, c.live)
			liveBufs := 0
			if c.live > 0 {
				liveBufs = 1
			}
			b := mustMalloc(t, a, c.size)
			eq(t, b.Len(), c.size, "fresh buffer")
			var want []int
			for _, i := range c.released {
				want = append(want, ids[i])
			}
			eqSlice(t, p.releasedIDs(), want, "released")
			counts(t, a, liveBufs+1+3-len(want), 3-len(want))
		})
	}
}

func TestSetMemoryLimit(t *testing.T) {
	p := newFake()
	p.workSet = 1000
	a := alloc.New(p, alloc.Config{MemoryLimit: 2000})
	s := a.Stats()
	eq(t, s.MemoryLimit, int64(2000), "memory limit")
	eq(t, s.GCLimit, int64(950), "gc limit = 0.95 x rws")
	eq(t, s.CacheLimit, int64(2000), "cache limit = memory limit")
	eq(t, a.SetMemoryLimit(500), int64(2000), "old memory limit")
	s = a.Stats()
	eq(t, s.MemoryLimit, int64(500), "new memory limit")
	eq(t, s.GCLimit, int64(500), "gc limit = new memory limit")
	eq(t, s.CacheLimit, int64(2000), "cache limit unchanged")
}

func TestHistogram(t *testing.T) {
	p := newFake()
	a := alloc.New(p, alloc.Config{})
	if h := a.Histogram(); len(h) != 0 {
		t.Fatalf("empty allocator histogram = %v", h)
	}
	for _, n := range []int{4, 5, 6, 7, 8, 15, 1, 16384, 16385} {
		mustMalloc(t, a, n)
	}
	cached := []alloc.Buffer{mustMalloc(t, a, 4), mustMalloc(t, a, 256)}
	for _, b := range cached {
		a.Free(b)
	}
	want := []alloc.SizeClass{
		{Bytes: 1, Count: 1}, {Bytes: 4, Count: 4}, {Bytes: 8, Count: 2},
		{Bytes: 16384, Count: 1}, {Bytes: 32768, Count: 1},
	}
	eqSlice(t, a.Histogram(), want, "histogram")
	eqSlice(t, a.Stats().Histogram, want, "Stats histogram")
}
