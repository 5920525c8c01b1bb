package kernels

import (
	"math"
	"math/rand"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"
)

// TestQuantRowMatchesRef checks the assembly row quantizer against q8QuantRowRef, code
// for code and scale for scale: every group size, rows of ordinary values, groups of
// zeros, values that round to halves.
func TestQuantRowMatchesRef(t *testing.T) {
	if !useVNNI {
		t.Skip("no AVX512-VNNI: the int8 kernels do not run")
	}
	rng := rand.New(rand.NewSource(8))
	for _, group := range []int{16, 32, 64, 128} {
		for trial := 0; trial < 20; trial++ {
			groups := 1 + rng.Intn(9)
			x := make([]float32, groups*group)
			for i := range x {
				x[i] = float32(rng.NormFloat64()) * float32(math.Pow(10, float64(rng.Intn(7)-3)))
			}
			switch trial % 4 {
			case 1: // a group of zeros
				clear(x[:group])
			case 2: // exact halves: max 127 makes inv 1
				x[0] = 127
				for i := 1; i < group; i++ {
					x[i] = float32(rng.Intn(255)-127) + 0.5
				}
			}
			wantQ, wantD := make([]int8, len(x)), make([]float32, groups)
			q8QuantRowRef(x, group, wantQ, wantD)
			gotQ, gotD := make([]int8, len(x)), make([]float32, groups)
			q8QuantRow(&x[0], groups, group/16, (*byte)(unsafe.Pointer(&gotQ[0])), &gotD[0])
			require.Equal(t, wantQ, gotQ, "group %d trial %d", group, trial)
			require.Equal(t, wantD, gotD, "group %d trial %d", group, trial)
		}
	}
}

// TestQmm8MatchesRef checks the int8 product (rowsMM8) against q8Ref, its definition,
// bit for bit: 4 and 8 bits, every group size and scale dtype, x row counts around the
// six-row pass, weight row counts around the 32-row panel pair, special values in x,
// with and without a helper.
func TestQmm8MatchesRef(t *testing.T) {
	if !useVNNI {
		t.Skip("no AVX512-VNNI: the int8 kernels do not run")
	}
	rng := rand.New(rand.NewSource(33))
	for _, bits := range []int{4, 8} {
		for _, group := range []int{32, 64, 128} {
			for _, dt := range []DType{Float32, Float16, BFloat16} {
				for _, mRows := range []int{1, 5, 6, 7, 13} {
					n := []int{1, 16, 31, 32, 33, 70, 200}[rng.Intn(7)]
					cols := group * (1 + rng.Intn(20))
					m := qsimdMatrix(rng, n, cols, bits, group, dt)
					require.True(t, m.useQmm8())
					xs, sums := randRowsWithSums(rng, &m, mRows)
					withAndWithoutHelper(func(h *Helper, served bool) {
						os := make([]float32, mRows*n)
						m.rowsMM8(xs, sums, mRows, n, os, h)
						for i := 0; i < mRows; i++ {
							for r := 0; r < n; r++ {
								want := m.q8Ref(xs[i*cols:(i+1)*cols], sums[i*m.groups:(i+1)*m.groups], r)
								got := os[i*n+r]
								require.Truef(t, sameBits(want, got), "bits %d group %d %s cols %d, served %v: x row %d of %d, row %d of %d: %v (%#x), want %v (%#x)",
									bits, group, dt, cols, served, i, mRows, r, n, got, math.Float32bits(got), want, math.Float32bits(want))
							}
						}
					})
				}
			}
		}
	}
}

// TestQ8RefNearFloat bounds the int8 path's departure from the float path (dot): the
// x rounding moves each x[k] by at most amax(group) / 254, so the two values differ by
// at most sum_g |scale_g| sum_k code_k amax_g / 254, plus float rounding (1e-5 of
// sum |x w|), for every format. A misread code or scale breaks the bound.
func TestQ8RefNearFloat(t *testing.T) {
	rng := rand.New(rand.NewSource(34))
	for _, bits := range []int{4, 8} {
		for _, group := range []int{32, 64, 128} {
			const n, cols = 8, 1024
			m := qsimdMatrix(rng, n, cols, bits, group, BFloat16)
			x := make([]float32, cols)
			for i := range x {
				x[i] = float32(rng.NormFloat64())
			}
			sums := make([]float32, m.groups)
			m.groupSums(x, sums)
			moved := 0
			for r := 0; r < n; r++ {
				var mag, bound float64
				for g := 0; g < m.groups; g++ {
					s, b := m.scaleBias(r, g)
					var amax, codes float64
					for k := g * group; k < (g+1)*group; k++ {
						amax = math.Max(amax, math.Abs(float64(x[k])))
						codes += float64(m.q8Code(r, k))
						mag += math.Abs(float64(x[k]) * float64(s*float32(m.q8Code(r, k))+b))
					}
					bound += math.Abs(float64(s)) * codes * amax / 254
				}
				diff := math.Abs(float64(m.q8Ref(x, sums, r) - m.dot(x, sums, r)))
				require.LessOrEqualf(t, diff, bound+1e-5*mag, "bits %d group %d row %d", bits, group, r)
				if diff > 0 {
					moved++
				}
			}
			require.Greaterf(t, moved, n/2, "bits %d group %d: the int8 path is not the float path", bits, group)
		}
	}
}
