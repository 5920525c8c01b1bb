package tensor_test

import (
	"testing"

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
