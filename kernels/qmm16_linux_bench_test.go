//go:build linux

package kernels

import (
	"fmt"
	"math/rand"
	"syscall"
	"testing"
	"time"

	"github.com/ingotml/ingot/internal/membw"
)

// BenchmarkPrefillGEMM times one prefill-sized product (128 x rows, the 0.8B's up
// projection: 3584 rows of 1024) on one core, with the blocked kernels ("blocked")
// the one-row kernels row after row ("rows", the path before them) and, where the CPU
// has the instructions, the fast prompt kernels ("fast": int8 at 4 and 8 bits,
// bfloat16 pairs), and reports
// GFLOP/s, and GFLOP per CPU-second as a share of the FMA probe's FLOP per
// CPU-second measured just before (%fma-cpu: the kernels' own efficiency per core,
// apart from the rest of a prefill, and steady on a machine that other jobs load;
// the blocked product uses both cores).
func BenchmarkPrefillGEMM(b *testing.B) {
	if !qAsm16() {
		b.Skip("no AVX-512")
	}
	const mRows, n, k = 128, 3584, 1024
	rng := rand.New(rand.NewSource(1))
	xs := make([]float32, mRows*k)
	for i := range xs {
		xs[i] = float32(rng.NormFloat64())
	}
	os := make([]float32, mRows*n)
	for _, format := range []string{"q4", "q8", "bf16"} {
		var run func(mode string)
		if format == "bf16" {
			ws := make([]uint16, n*k)
			for i := range ws {
				ws[i] = F32ToBF16(float32(rng.NormFloat64()))
			}
			x16 := make([]uint16, len(xs))
			for i, v := range xs {
				x16[i] = F32ToBF16(v)
			}
			run = func(mode string) {
				switch mode {
				case "blocked":
					halfRowsMM(BFloat16, xs, ws, mRows, n, k, os, nil)
					return
				case "fast":
					halfRowsBFDot(x16, ws, mRows, n, k, os, nil)
					return
				}
				for i := 0; i < mRows; i++ {
					halfRows(BFloat16, xs[i*k:(i+1)*k], ws, os[i*n:(i+1)*n], false)
				}
			}
		} else {
			bits := 4
			if format == "q8" {
				bits = 8
			}
			m := qsimdMatrix(rng, n, k, bits, 64, BFloat16)
			sums := make([]float32, mRows*m.groups)
			for i := 0; i < mRows; i++ {
				m.groupSums(xs[i*k:(i+1)*k], sums[i*m.groups:])
			}
			run = func(mode string) {
				switch mode {
				case "blocked":
					m.rowsMM16(xs, sums, mRows, n, os, nil)
				case "fast":
					m.rowsMM8(xs, sums, mRows, n, os, nil)
				default:
					m.rowsAll16(xs, sums, mRows, n, os, true, nil)
				}
			}
		}
		modes := []string{"blocked", "rows"}
		if format == "bf16" && useAVX512BF16 || format != "bf16" && useVNNI {
			modes = append(modes, "fast")
		}
		for _, mode := range modes {
			b.Run(fmt.Sprintf("%s/%s", format, mode), func(b *testing.B) {
				c0, t0 := cpuSeconds(), time.Now()
				fma := membw.FMAProbe(1, 3, 50*time.Millisecond)
				fmaCPU := fma * time.Since(t0).Seconds() / (cpuSeconds() - c0) // FLOP per CPU-second
				b.ResetTimer()
				c0 = cpuSeconds()
				for range b.N {
					run(mode)
				}
				cpu := cpuSeconds() - c0
				flop := 2 * float64(mRows*n*k) * float64(b.N)
				b.ReportMetric(flop/b.Elapsed().Seconds()/1e9, "GFLOP/s")
				if fma > 0 {
					b.ReportMetric(100*flop/cpu/fmaCPU, "%fma-cpu")
				}
			})
		}
	}
}

// cpuSeconds is the process's user and system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
}
