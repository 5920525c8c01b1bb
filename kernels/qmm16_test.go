package kernels

import (
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestQmm16MatchesDot checks the blocked 16-lane product (rowsMM16) against
// qMatrix.dot, the definition, bit for bit: 4 and 8 bits, every group size and scale
// dtype, x row counts around the four-row block, odd and even weight row counts,
// group counts around the 16-group block, special values in x, with and without a
// helper and with tiles small enough that the rows split into many, odd-length tiles.
func TestQmm16MatchesDot(t *testing.T) {
	if !qAsm16() {
		t.Skip("no AVX-512: the blocked kernel does not run")
	}
	rng := rand.New(rand.NewSource(32))
	for _, bits := range []int{4, 8} {
		for _, group := range []int{32, 64, 128} {
			for _, dt := range []DType{Float32, Float16, BFloat16} {
				for _, mRows := range []int{2, 3, 4, 5, 6, 7, 8, 9, 16, 19} {
					n := 2 + rng.Intn(37)
					cols := group * (1 + rng.Intn(40))
					m := qsimdMatrix(rng, n, cols, bits, group, dt)
					require.True(t, m.useQmm16(mRows, n))
					xs, sums := randRowsWithSums(rng, &m, mRows)
					os := make([]float32, mRows*n)
					m.rowsMM16(xs, sums, mRows, n, os, nil)
					for i := 0; i < mRows; i++ {
						for r := 0; r < n; r++ {
							want := m.dot(xs[i*cols:(i+1)*cols], sums[i*m.groups:(i+1)*m.groups], r)
							got := os[i*n+r]
							require.Truef(t, sameBits(want, got), "bits %d group %d %s cols %d: x row %d of %d, row %d of %d: %v (%#x), want %v (%#x)",
								bits, group, dt, cols, i, mRows, r, n, got, math.Float32bits(got), want, math.Float32bits(want))
						}
					}
				}
			}
		}
	}
}

// TestQmm16HalfScalesMatchDot checks a decode step's product over bfloat16 scales in
// whole 16-group blocks, which the kernels read and widen themselves (qmm16*w1h),
// against dot bit for bit: both widths, one and two blocks of groups, every step size.
func TestQmm16HalfScalesMatchDot(t *testing.T) {
	if !qAsm16() {
		t.Skip("no AVX-512: the blocked kernel does not run")
	}
	rng := rand.New(rand.NewSource(33))
	for _, bits := range []int{4, 8} {
		for _, cols := range []int{16 * 32, 32 * 32, 16 * 64} {
			for mRows := 2; mRows <= qmmStepRows; mRows++ {
				n := 2 + rng.Intn(37)
				group := 32
				if cols == 16*64 {
					group = 64
				}
				m := qsimdMatrix(rng, n, cols, bits, group, BFloat16)
				require.True(t, m.useHalfScales())
				xs, sums := randRowsWithSums(rng, &m, mRows)
				os := make([]float32, mRows*n)
				withAndWithoutHelper(func(h *Helper, _ bool) {
					clear(os)
					m.rowsMM16(xs, sums, mRows, n, os, h)
					for i := 0; i < mRows; i++ {
						for r := 0; r < n; r++ {
							want := m.dot(xs[i*cols:(i+1)*cols], sums[i*m.groups:(i+1)*m.groups], r)
							require.Truef(t, sameBits(want, os[i*n+r]), "bits %d cols %d: x row %d of %d, row %d of %d: %v, want %v",
								bits, cols, i, mRows, r, n, os[i*n+r], want)
						}
					}
				})
			}
		}
	}
}

// TestQmm16WideMatchesDot runs a product large enough to take parallelWide (a second
// goroutine without a helper, and with one that a goroutine serves) and checks every
// value against the single-row kernel path (rows16, itself checked against dot).
func TestQmm16WideMatchesDot(t *testing.T) {
	if !qAsm16() {
		t.Skip("no AVX-512: the blocked kernel does not run")
	}
	rng := rand.New(rand.NewSource(5))
	const mRows, n, cols = 19, 1501, 2560
	require.GreaterOrEqual(t, mRows*n*cols, qmmWideMACs)
	m := qsimdMatrix(rng, n, cols, 4, 64, BFloat16)
	xs := make([]float32, mRows*cols)
	for i := range xs {
		xs[i] = float32(rng.NormFloat64())
	}
	sums := make([]float32, mRows*m.groups)
	for i := 0; i < mRows; i++ {
		m.groupSums(xs[i*cols:(i+1)*cols], sums[i*m.groups:])
	}
	want := make([]float32, mRows*n)
	q := new(qSIMD).init(&m)
	for i := 0; i < mRows; i++ {
		m.rows16(xs[i*cols:(i+1)*cols], sums[i*m.groups:], 0, want[i*n:(i+1)*n], q)
	}
	withAndWithoutHelper(func(h *Helper, served bool) {
		got := make([]float32, mRows*n)
		m.rowsMM16(xs, sums, mRows, n, got, h)
		for i := range want {
			require.Truef(t, sameBits(want[i], got[i]), "served %v: x row %d, row %d: %v, want %v", served, i/n, i%n, got[i], want[i])
		}
	})
}

// TestGemm16MatchesGemv16 checks the blocked half linear (halfRowsMM) against the
// one-row kernel path (halfRows, checked against mmDot16 in linear16_test.go) bit for
// bit, and against mmDot16 itself where K is a multiple of 16: both dtypes, x row
// counts around the four-row block, weight row counts around the four-row quad, K
// with and without a tail, special values.
func TestGemm16MatchesGemv16(t *testing.T) {
	if !useAVX512 {
		t.Skip("no AVX-512: the blocked kernel does not run")
	}
	rng := rand.New(rand.NewSource(16))
	for _, dt := range []DType{BFloat16, Float16} {
		for _, mRows := range []int{2, 3, 4, 5, 6, 7, 8, 9, 16, 19} {
			for _, k := range []int{16, 48, 100, 1024} {
				n := 4 + rng.Intn(45)
				ws := make([]uint16, n*k)
				wf := make([]float32, n*k)
				for i := range ws {
					v := rng.NormFloat64()
					if dt == BFloat16 {
						ws[i] = F32ToBF16(float32(v))
						wf[i] = BF16ToF32(ws[i])
					} else {
						ws[i] = F32ToF16(float32(v))
						wf[i] = F16ToF32(ws[i])
					}
				}
				xf := make([]float32, mRows*k)
				for i := 0; i < mRows; i++ {
					copy(xf[i*k:], simdRandRow(rng, k, rng.Intn(3) == 0))
				}
				got := make([]float32, mRows*n)
				halfRowsMM(dt, xf, ws, mRows, n, k, got, nil)
				want := make([]float32, n)
				for i := 0; i < mRows; i++ {
					halfRows(dt, xf[i*k:(i+1)*k], ws, want, false)
					for r := 0; r < n; r++ {
						require.Truef(t, sameBits(want[r], got[i*n+r]), "%s k %d: x row %d of %d, row %d of %d: %v, want %v", dt, k, i, mRows, r, n, got[i*n+r], want[r])
						if k%16 == 0 {
							d := mmDot16(xf[i*k:(i+1)*k], wf[r*k:(r+1)*k])
							require.Truef(t, sameBits(d, got[i*n+r]), "%s k %d: x row %d, row %d: %v, mmDot16 %v", dt, k, i, r, got[i*n+r], d)
						}
					}
				}
			}
		}
	}
}

// randRowsWithSums makes mRows x rows for m (simdRandRow's mixed magnitudes, a third
// of the rows with special values) and their group sums.
func randRowsWithSums(rng *rand.Rand, m *qMatrix, mRows int) (xs, sums []float32) {
	cols := m.cols
	xs = make([]float32, mRows*cols)
	sums = make([]float32, mRows*m.groups)
	for i := 0; i < mRows; i++ {
		copy(xs[i*cols:], simdRandRow(rng, cols, rng.Intn(3) == 0))
		m.groupSums(xs[i*cols:(i+1)*cols], sums[i*m.groups:])
	}
	return xs, sums
}
