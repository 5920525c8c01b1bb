//go:build linux

package kernels

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/ingotml/ingot/internal/membw"
)

// BenchmarkDecodeStepGEMM times a batched decode step's product at 4 bits, g64,
// bfloat16 scales (a mlx-community checkpoint's layout) for M = 1 to 8 x rows, on
// both cores (a helper serving), with the weights cold: the step walks copies of
// the matrix that together pass 64 MB, as a real step streams the whole model.
// It reports the weights' GB/s and the GFLOP/s as a share of the FMA probe on both
// cores, measured just before ("%fma"): one row is bound by the weights' bandwidth,
// several by the multiply-adds.
func BenchmarkDecodeStepGEMM(b *testing.B) {
	if !qAsm16() {
		b.Skip("no AVX-512")
	}
	rng := rand.New(rand.NewSource(1))
	for _, shape := range [][2]int{{3584, 1024}, {1024, 3584}, {248320, 1024}} {
		n, k := shape[0], shape[1]
		one := qsimdMatrix(rng, n, k, 4, 64, BFloat16)
		copies := max(1, (64<<20)/(n*one.rowBytes))
		ms := []qMatrix{one}
		for len(ms) < copies {
			ms = append(ms, qsimdMatrix(rng, n, k, 4, 64, BFloat16))
		}
		for _, mRows := range []int{1, 2, 4, 5, 8} {
			xs := make([]float32, mRows*k)
			for i := range xs {
				xs[i] = float32(rng.NormFloat64())
			}
			sums := make([]float32, mRows*one.groups)
			for i := 0; i < mRows; i++ {
				one.groupSums(xs[i*k:(i+1)*k], sums[i*one.groups:])
			}
			out := make([]float32, mRows*n)
			b.Run(fmt.Sprintf("%dx%d/M%d", n, k, mRows), func(b *testing.B) {
				fma := membw.FMAProbe(2, 3, 50*time.Millisecond) // before the helper spins
				h := &Helper{}
				stop := make(chan struct{})
				defer close(stop)
				go h.Serve(stop)
				i := 0
				b.ResetTimer()
				for range b.N {
					m := &ms[i%len(ms)]
					i++
					if mRows == 1 {
						m.rowsAll16(xs, sums, 1, n, out, false, h)
					} else {
						m.rowsMM16(xs, sums, mRows, n, out, h)
					}
				}
				flop := 2 * float64(mRows*n*k) * float64(b.N)
				bytes := float64(n*(one.rowBytes+4*one.groups)) * float64(b.N)
				b.ReportMetric(bytes/b.Elapsed().Seconds()/1e9, "GB/s")
				if fma > 0 {
					b.ReportMetric(100*flop/b.Elapsed().Seconds()/fma, "%fma")
				}
			})
		}
	}
}
