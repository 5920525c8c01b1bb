package kernels_test

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/ingotml/ingot/kernels"
)

// The decode-sized kernel benchmarks of the speed work. They use only the exported
// API, so scripts/bench-compare.sh can run this file against an older revision too.

// BenchmarkGEMV times one decode-step linear (one x row of 64) for the repro's output
// widths, in GFLOP/s.
func BenchmarkGEMV(b *testing.B) {
	rng := rand.New(rand.NewSource(5))
	for _, n := range []int{64, 128, 192} {
		b.Run(fmt.Sprintf("%dx64", n), func(b *testing.B) {
			l := &kernels.Launch{Kernel: kernels.KLinear, NArgs: 3,
				Params: &kernels.MatmulParams{Batch: 1, M: 1, N: n, K: 64, XStride: 64, WStride: n * 64}}
			for i, sh := range [][]int{{1, 64}, {n, 64}, {1, n}} {
				l.Args[i] = kernels.NewArg(kernels.Contiguous(kernels.Float32, sh...))
				kernels.Fill(rng, &l.Args[i], -1, 1)
			}
			for b.Loop() {
				kernels.Run(l)
			}
			b.ReportMetric(float64(2*n*64)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}

// BenchmarkSDPAKeys times the repro's attention decode step (Hq 4, Hkv 2, D 16, one
// query) over 1k and 10k cached keys.
func BenchmarkSDPAKeys(b *testing.B) {
	rng := rand.New(rand.NewSource(6))
	for _, skv := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("%dk", skv/1000), func(b *testing.B) {
			const d = 16
			l := &kernels.Launch{Kernel: kernels.KSDPA, Params: &kernels.SDPAParams{Scale: 1 / math.Sqrt(d)}, NArgs: 4}
			for i, sh := range [][]int{{1, 4, 1, d}, {1, 2, skv, d}, {1, 2, skv, d}, {1, 4, 1, d}} {
				l.Args[i] = kernels.NewArg(kernels.Contiguous(kernels.Float32, sh...))
				kernels.Fill(rng, &l.Args[i], -1, 1)
			}
			b.ReportAllocs()
			for b.Loop() {
				kernels.Run(l)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(4*skv), "ns/key")
		})
	}
}
