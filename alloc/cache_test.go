package alloc_test

import (
	"testing"

	"github.com/ingotml/ingot/alloc"
)

// reuses reports whether a request for want bytes reuses a freed buffer of
// length have, on a fresh allocator.
func reuses(t *testing.T, have, want int) bool {
	t.Helper()
	p := newFake()
	a := alloc.New(p, alloc.Config{})
	old := mustMalloc(t, a, have)
	eq(t, old.Len(), have, "cached length")
	a.Free(old)
	got := mustMalloc(t, a, want)
	hit := got.Raw() == old.Raw()
	if hit {
		eq(t, got.Len(), have, "reused length")
		eq(t, p.numAllocs(), 1, "device allocs on a hit")
		counts(t, a, 1, 0)
	} else {
		eq(t, p.numAllocs(), 2, "device allocs on a miss")
		counts(t, a, 2, 1)
	}
	return hit
}

func TestReuseWindow(t *testing.T) {
	for _, c := range []struct {
		have, want int
		hit        bool
	}{
		{4, 4, true}, {5, 4, true}, {6, 4, true}, {7, 4, true}, {8, 4, false},
		{3, 4, false}, // smaller than the request: never a candidate
		{16384, 16384, true},
		{32768, 16384, false},
		{49152, 32768, true},
		{65536, 32768, false}, // 2*size bound, strict
		{114688, 98304, true},
		{131072, 98304, false}, // size + 2 pages bound, strict
		{16384, 16385, false},  // 16385 rounds to 32768
		{32768, 16385, true},
	} {
		if got := reuses(t, c.have, c.want); got != c.hit {
			t.Errorf("request %d with %d cached: hit %v, want %v", c.want, c.have, got, c.hit)
		}
	}
}

func TestReuseTakesSmallestCandidate(t *testing.T) {
	p := newFake()
	a := alloc.New(p, alloc.Config{})
	six := mustMalloc(t, a, 6)
	five := mustMalloc(t, a, 5)
	a.Free(six) // older
	a.Free(five)
	if got := mustMalloc(t, a, 4); got.Raw() != five.Raw() {
		t.Fatalf("got a %d-byte buffer, want the smallest candidate (5)", got.Len())
	}
	if got := mustMalloc(t, a, 4); got.Raw() != six.Raw() {
		t.Fatalf("got a %d-byte buffer, want 6", got.Len())
	}
}

func TestReuseExaminesOnlySmallestCandidate(t *testing.T) {
	p := newFake()
	a := alloc.New(p, alloc.Config{})
	three := mustMalloc(t, a, 3)
	eight := mustMalloc(t, a, 8)
	a.Free(three)
	a.Free(eight)
	// The smallest length >= 4 is 8, outside the window: a miss, although a
	// smaller cached buffer exists.
	b := mustMalloc(t, a, 4)
	if b.Raw() == three.Raw() || b.Raw() == eight.Raw() {
		t.Fatalf("expected a fresh buffer")
	}
	counts(t, a, 3, 2)
}

func TestReuseFIFOAmongEqualLengths(t *testing.T) {
	p := newFake()
	a := alloc.New(p, alloc.Config{})
	bufs := []alloc.Buffer{mustMalloc(t, a, 4), mustMalloc(t, a, 4), mustMalloc(t, a, 4)}
	for _, b := range bufs {
		a.Free(b)
	}
	for i, want := range bufs {
		if got := mustMalloc(t, a, 4); got.Raw() != want.Raw() {
			t.Fatalf("reuse %d: got raw %d, want raw %d", i, id(t, got), id(t, want))
		}
	}
	eq(t, p.numAllocs(), 3, "device allocs")
}

func TestRounding(t *testing.T) {
	p := newFake()
	a := alloc.New(p, alloc.Config{})
	for _, c := range []struct{ req, got int }{
		{1, 1}, {4, 4}, {5, 5}, {16383, 16383}, {16384, 16384},
		{16385, 32768}, {32768, 32768}, {32769, 49152}, {100000, 114688},
	} {
		b := mustMalloc(t, a, c.req)
		eq(t, b.Len(), c.got, "Len")
		eq(t, len(b.Bytes()), c.got, "len(Bytes)")
		eq(t, p.allocs[len(p.allocs)-1], c.got, "device request")
	}
}

func TestFreeIntoCacheKeepsCount(t *testing.T) {
	p := newFake()
	a := alloc.New(p, alloc.Config{})
	b := mustMalloc(t, a, 100)
	counts(t, a, 1, 0)
	a.Free(b)
	counts(t, a, 1, 1)
	eq(t, a.CacheMemory(), int64(100), "cache memory")
	eq(t, a.ActiveMemory(), int64(0), "active memory")
	eq(t, len(p.releasedIDs()), 0, "releases")

	mustPanic(t, "alloc: Free of a stale buffer (generation 0, the buffer is at 1): it was already freed, and may now belong to another owner",
		func() { a.Free(b) }) // double free
	counts(t, a, 1, 1)
	eq(t, a.CacheMemory(), int64(100), "cache memory after double free")

	other := alloc.New(newFake(), alloc.Config{})
	c := mustMalloc(t, a, 8)
	other.Free(c) // not other's buffer: ignored
	counts(t, a, 2, 1)
	counts(t, other, 0, 0)
}

// TestStaleFreeAfterReusePanics: a copy of a freed Buffer whose object a later Malloc
// handed to a new owner must not free the new owner's buffer.
func TestStaleFreeAfterReusePanics(t *testing.T) {
	p := newFake()
	a := alloc.New(p, alloc.Config{})
	old := mustMalloc(t, a, 4)
	a.Free(old)
	owner := mustMalloc(t, a, 4) // a cache hit: the same device object
	eq(t, id(t, owner), id(t, old), "reused object")
	mustPanic(t, "alloc: Free of a stale buffer (generation 0, the buffer is at 1): it was already freed, and may now belong to another owner",
		func() { a.Free(old) })
	counts(t, a, 1, 0)
	eq(t, a.ActiveMemory(), int64(4), "the new owner's buffer is still live")
	a.Free(owner)
	counts(t, a, 1, 1)
	mustPanic(t, "alloc: Free of a stale buffer (generation 1, the buffer is at 2): it was already freed, and may now belong to another owner",
		func() { a.Free(owner) })
}

func TestFreeAtCacheLimitReleases(t *testing.T) {
	p := newFake()
	a := alloc.New(p, alloc.Config{})
	a.SetCacheLimit(8)
	x, y, z := mustMalloc(t, a, 4), mustMalloc(t, a, 4), mustMalloc(t, a, 4)
	zid := id(t, z)
	a.Free(x) // cache 0 < 8: cached
	a.Free(y) // cache 4 < 8: cached
	counts(t, a, 3, 2)
	a.Free(z) // cache 8, not below 8: released
	counts(t, a, 2, 2)
	eqSlice(t, p.releasedIDs(), []int{zid}, "released")
	if z.Len() != 0 || z.Bytes() != nil {
		t.Fatalf("released buffer still has data")
	}
	checkClean(t, p)
}

func TestFreeCachesWhenJustBelowLimit(t *testing.T) {
	p := newFake()
	a := alloc.New(p, alloc.Config{})
	a.SetCacheLimit(5)
	x, y := mustMalloc(t, a, 4), mustMalloc(t, a, 100)
	a.Free(x)
	a.Free(y) // 4 < 5: cached although it overshoots the limit
	counts(t, a, 2, 2)
	eq(t, a.CacheMemory(), int64(104), "cache memory")
}

func TestCacheLimitZeroReleasesEveryFree(t *testing.T) {
	p := newFake()
	a := alloc.New(p, alloc.Config{})
	eq(t, a.SetCacheLimit(0), a.Stats().MemoryLimit, "old cache limit (default = memory limit)")
	bufs := []alloc.Buffer{mustMalloc(t, a, 4), mustMalloc(t, a, 64)}
	for _, b := range bufs {
		a.Free(b)
	}
	counts(t, a, 0, 0)
	eq(t, len(p.releasedIDs()), 2, "releases")
}

func TestClearCacheRestoresBaseline(t *testing.T) {
	p := newFake()
	a := alloc.New(p, alloc.Config{})
	for range 5 {
		mustMalloc(t, a, 4)
	}
	base := a.ActiveBufferCount()
	var extra []alloc.Buffer
	for _, n := range []int{4, 4, 7, 100, 20000} {
		extra = append(extra, mustMalloc(t, a, n))
	}
	for _, b := range extra {
		a.Free(b)
	}
	counts(t, a, base+5, 5)
	a.ClearCache()
	counts(t, a, base, 0)
	eq(t, a.CacheMemory(), int64(0), "cache memory")
	eq(t, len(p.releasedIDs()), 5, "releases")
	eq(t, p.liveCount(), base, "device objects")
	checkClean(t, p)
}

// fourCached leaves buffers of 100, 200, 300, 400 bytes cached, recycled in
// that order, and returns them and their device ids.
func fourCached(t *testing.T, a *alloc.Allocator) ([]alloc.Buffer, []int) {
	t.Helper()
	var bs []alloc.Buffer
	var ids []int
	for _, n := range []int{100, 200, 300, 400} {
		bs = append(bs, mustMalloc(t, a, n))
		ids = append(ids, id(t, bs[len(bs)-1]))
	}
	for _, b := range bs {
		a.Free(b)
	}
	counts(t, a, 4, 4)
	eq(t, a.CacheMemory(), int64(1000), "cache memory")
	return bs, ids
}

func TestSetCacheLimitTrimsOnNextHit(t *testing.T) {
	p := newFake()
	a := alloc.New(p, alloc.Config{})
	bs, ids := fourCached(t, a)
	old := a.SetCacheLimit(650)
	eq(t, old, a.Stats().MemoryLimit, "old limit")
	eq(t, a.CacheMemory(), int64(1000), "cache memory before the next malloc")
	eq(t, len(p.releasedIDs()), 0, "releases before the next malloc")
	counts(t, a, 4, 4)

	// The hit takes the 100 (cache 900); then 250 bytes must go, oldest
	// first: 200, then 300.
	if got := mustMalloc(t, a, 100); got.Raw() != bs[0].Raw() {
		t.Fatalf("expected a hit on the 100-byte buffer")
	}
	eqSlice(t, p.releasedIDs(), []int{ids[1], ids[2]}, "released")
	eq(t, a.CacheMemory(), int64(400), "cache memory")
	counts(t, a, 2, 1)
}

func TestSetCacheLimitTrimsOnNextMiss(t *testing.T) {
	p := newFake()
	a := alloc.New(p, alloc.Config{})
	_, ids := fourCached(t, a)
	a.SetCacheLimit(650)
	// Miss; 350 bytes must go, oldest first: 100, 200, 300.
	mustMalloc(t, a, 1000)
	eqSlice(t, p.releasedIDs(), ids[:3], "released")
	eq(t, a.CacheMemory(), int64(400), "cache memory")
	counts(t, a, 2, 1)
}
