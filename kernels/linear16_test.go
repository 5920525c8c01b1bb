package kernels

import (
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLinearHalfMatchesDot16 runs the half-weight linear (AVX-512 where present, four
// rows per pass, masked tails) and requires every output to be mmDot16 of the widened
// rows, rounded to the dtype, bit for bit: both half dtypes, K with and without a tail,
// row counts around the four-row pass, one and several x rows (GEMV and the tiled
// GEMM), a batch, and a product large enough to be split with a helper.
func TestLinearHalfMatchesDot16(t *testing.T) {
	t.Logf("useAVX512 = %v", useAVX512)
	rng := rand.New(rand.NewSource(21))
	for _, dt := range []DType{BFloat16, Float16} {
		for _, c := range []struct{ batch, m, n, k int }{
			{1, 1, 7, 16}, {1, 1, 9, 37}, {1, 2, 4, 5}, {2, 1, 13, 64}, {1, 5, 21, 48}, {1, 1, 600, 1024},
		} {
			p := &MatmulParams{Batch: c.batch, M: c.m, N: c.n, K: c.k, XStride: c.m * c.k, WStride: c.n * c.k}
			l := &Launch{Kernel: KLinear, NArgs: 3, Params: p}
			l.Args[0] = NewArg(Contiguous(dt, c.batch, c.m, c.k))
			l.Args[1] = NewArg(Contiguous(dt, c.batch, c.n, c.k))
			l.Args[2] = NewArg(Contiguous(dt, c.batch, c.m, c.n))
			Fill(rng, &l.Args[0], -1, 1)
			Fill(rng, &l.Args[1], -1, 1)
			h := &Helper{}
			l.Helper = h
			done := make(chan struct{})
			go h.Serve(done)
			Run(l)
			close(done)
			xf, wf := make([]float32, c.k), make([]float32, c.k)
			for b := 0; b < c.batch; b++ {
				for i := 0; i < c.m; i++ {
					mmWiden(xf, &l.Args[0], (b*c.m+i)*c.k)
					for r := 0; r < c.n; r++ {
						mmWiden(wf, &l.Args[1], (b*c.n+r)*c.k)
						want := float32(Load(dt, F32ToHalfBytes(dt, mmDot16(xf, wf)), 0))
						got := float32(Load(dt, l.Args[2].Data, (b*c.m+i)*c.n+r))
						require.Truef(t, math.Float32bits(want) == math.Float32bits(got), "%s %+v at (%d, %d, %d): %v, want %v", dt, c, b, i, r, got, want)
					}
				}
			}
		}
	}
}

// F32ToHalfBytes is v stored as one element of dtype dt.
func F32ToHalfBytes(dt DType, v float32) []byte {
	b := make([]byte, 2)
	Store(dt, b, 0, float64(v))
	return b
}
