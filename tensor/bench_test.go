package tensor_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/ingotml/ingot/alloc"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/tensor"
)

// BenchmarkChain1000 builds and evaluates a 1,000-node elementwise chain on the CPU
// device (64-element float32 rows, as in the decode loop), inside a scope as the decode
// loop builds its steps, with the census off and on. ns/op and allocs/op are per chain:
// ns/node is the per-node figure.
func BenchmarkChain1000(b *testing.B) {
	for _, census := range []bool{false, true} {
		b.Run(map[bool]string{false: "census-off", true: "census-on"}[census], func(b *testing.B) {
			g := graph.NewCPU(graph.Options{})
			if census {
				g.EnableCensus()
			}
			v := make([]float32, 64)
			for i := range v {
				v[i] = float32(i) * 0.01
			}
			x0 := tensor.FromFloat32(g, v, 64)
			y := tensor.FromFloat32(g, v, 64)
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				var x tensor.Array
				tensor.WithScope(g, func() {
					x = x0
					for j := 0; j < 1000; j++ {
						x = tensor.Add(x, y)
					}
					x = tensor.Keep(x)
				})
				if err := tensor.Eval(x); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/1000, "ns/node")
		})
	}
}

// BenchmarkSynchronizeDeadChain measures Synchronize (a forced collection and a sweep)
// with a held, never-evaluated chain of n links (one pending node and one 4-byte scalar
// each, built step by step in scopes, as the lazy cache does): the collection's cost
// should not grow with the chain.
func BenchmarkSynchronizeDeadChain(b *testing.B) {
	for _, n := range []int{10000, 200000} {
		b.Run(fmt.Sprintf("links=%d", n), func(b *testing.B) {
			g := graph.NewCPU(graph.Options{Alloc: alloc.Config{ResourceLimit: 1 << 30}})
			lp := tensor.FromInt32(g, []int32{0}, 1)
			for i := 0; i < n; i++ {
				tensor.WithScope(g, func() { tensor.Assign(&lp, tensor.SubScalar(lp, 1)) })
			}
			if err := g.Synchronize(); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if err := g.Synchronize(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			runtime.KeepAlive(lp)
		})
	}
}
