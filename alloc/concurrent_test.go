package alloc_test

import (
	"errors"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/ingotml/ingot/alloc"
)

func TestConcurrentCountsStayExact(t *testing.T) {
	const limit = 40
	p := newFake()
	a := alloc.New(p, alloc.Config{ResourceLimit: limit})
	sizes := []int{4, 4, 4, 7, 8, 256, 20000}
	var wg sync.WaitGroup
	var limitErrs sync.Map
	for g := range 4 {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(g), 1))
			var held []alloc.Buffer
			for i := range 3000 {
				if len(held) > 0 && (len(held) >= 15 || r.IntN(2) == 0) {
					j := r.IntN(len(held))
					a.Free(held[j])
					held = append(held[:j], held[j+1:]...)
					continue
				}
				b, err := a.Malloc(sizes[r.IntN(len(sizes))])
				if err != nil {
					var rle *alloc.ResourceLimitError
					if !errors.As(err, &rle) {
						t.Errorf("unexpected error: %v", err)
						return
					}
					limitErrs.Store(g, true)
					continue
				}
				b.Bytes()[0] = byte(i) // the race detector checks ownership
				held = append(held, b)
				if i%500 == 0 {
					a.ClearCache()
				}
			}
			for _, b := range held {
				a.Free(b)
			}
		})
	}
	wg.Wait()

	s := a.Stats()
	eq(t, s.LiveBufferCount, 0, "live buffers")
	eq(t, s.ActiveMemory, int64(0), "active memory")
	eq(t, s.ActiveBufferCount, s.CacheBufferCount, "active == cached")
	eq(t, p.liveCount(), s.ActiveBufferCount, "device objects == count")
	eq(t, len(s.Histogram), 0, "histogram classes")
	if p.maxLive > limit {
		t.Fatalf("device objects peaked at %d, above the limit %d", p.maxLive, limit)
	}
	a.ClearCache()
	eq(t, p.liveCount(), 0, "device objects after ClearCache")
	checkClean(t, p)
}
