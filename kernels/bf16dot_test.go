package kernels

import (
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBFDotMatchesRef checks the pair-dot product (halfRowsBFDot) against bfDotRef, its
// definition, bit for bit: x row counts around the eight-row pass, weight row counts
// around the 32-row panel pair, K around a cache line, values of mixed magnitude with
// zeros, subnormals, infinities and NaNs, with and without a helper.
func TestBFDotMatchesRef(t *testing.T) {
	if !useAVX512BF16 {
		t.Skip("no AVX512_BF16: the pair-dot kernels do not run")
	}
	rng := rand.New(rand.NewSource(16))
	bf := func(n int, special bool) []uint16 {
		v := make([]uint16, n)
		for i, f := range simdRandRow(rng, n, special) {
			v[i] = F32ToBF16(f)
		}
		return v
	}
	for _, mRows := range []int{1, 3, 8, 9, 17} {
		for _, n := range []int{1, 16, 32, 45, 100} {
			k := 2 * (1 + rng.Intn(300))
			special := rng.Intn(2) == 0
			xs, ws := bf(mRows*k, special), bf(n*k, special)
			withAndWithoutHelper(func(h *Helper, served bool) {
				of := make([]float32, mRows*n)
				halfRowsBFDot(xs, ws, mRows, n, k, of, h)
				for i := 0; i < mRows; i++ {
					for r := 0; r < n; r++ {
						want := bfDotRef(xs[i*k:(i+1)*k], ws[r*k:(r+1)*k])
						got := of[i*n+r]
						require.Truef(t, sameBits(want, got), "k %d, served %v: x row %d of %d, row %d of %d: %v (%#x), want %v (%#x)",
							k, served, i, mRows, r, n, got, math.Float32bits(got), want, math.Float32bits(want))
					}
				}
			})
		}
	}
}

// TestBFDotNearMMDot bounds the pair-dot path's departure from the float path's order
// (mmDot16) on Gaussian bfloat16 rows: within 8 float32 ulps of sum |x w| (K = 1024),
// and equal to it after rounding to bfloat16 for most rows.
func TestBFDotNearMMDot(t *testing.T) {
	rng := rand.New(rand.NewSource(17))
	const k, rows = 1024, 64
	same := 0
	for r := 0; r < rows; r++ {
		x, w := make([]uint16, k), make([]uint16, k)
		xf, wf := make([]float32, k), make([]float32, k)
		var mag float64
		for i := range x {
			x[i], w[i] = F32ToBF16(float32(rng.NormFloat64())), F32ToBF16(float32(rng.NormFloat64()))
			xf[i], wf[i] = BF16ToF32(x[i]), BF16ToF32(w[i])
			mag += math.Abs(float64(xf[i]) * float64(wf[i]))
		}
		a, b := bfDotRef(x, w), mmDot16(xf, wf)
		require.LessOrEqual(t, math.Abs(float64(a-b)), 8*mag*math.Pow(2, -24), "row %d", r)
		if F32ToBF16(a) == F32ToBF16(b) {
			same++
		}
	}
	require.Greater(t, same, rows/2)
}
