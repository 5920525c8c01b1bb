package alloc_test

import (
	"testing"

	"github.com/ingotml/ingot/alloc"
)

// BenchmarkMallocFreeHit measures one Malloc+Free pair served by the cache.
func BenchmarkMallocFreeHit(b *testing.B) {
	for _, c := range []struct {
		name string
		size int
	}{{"4B", 4}, {"256B", 256}} {
		b.Run(c.name, func(b *testing.B) {
			a := alloc.New(alloc.CPUProvider(), alloc.Config{})
			// Some other cached lengths so the search is not trivial.
			for _, n := range []int{1, 2, 16, 64, 1024, 4096} {
				buf, _ := a.Malloc(n)
				defer a.Free(buf)
			}
			warm, _ := a.Malloc(c.size)
			a.Free(warm)
			b.ReportAllocs()
			for b.Loop() {
				buf, err := a.Malloc(c.size)
				if err != nil {
					b.Fatal(err)
				}
				a.Free(buf)
			}
		})
	}
}

func TestHitPathAllocatesNothing(t *testing.T) {
	a := alloc.New(alloc.CPUProvider(), alloc.Config{})
	warm := mustMalloc(t, a, 4)
	a.Free(warm)
	n := testing.AllocsPerRun(1000, func() {
		buf, _ := a.Malloc(4)
		a.Free(buf)
	})
	eq(t, n, 0.0, "allocs per Malloc+Free hit")
}
