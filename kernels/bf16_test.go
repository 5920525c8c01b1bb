package kernels

import (
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBF16SlicesMatchDefinitions: widenBF16 and narrowBF16 give BF16ToF32 and F32ToBF16
// bit for bit at every length (the AVX-512 blocks and the tail), on random bit patterns
// and on the values where rounding is delicate: ties to even both ways, the largest
// finite values rounding to infinity, infinities, NaNs of both signs and payloads,
// zeros and subnormals.
func TestBF16SlicesMatchDefinitions(t *testing.T) {
	t.Logf("useAVX512 = %v", useAVX512)
	special := []uint32{0, 0x80000000, 1, 0x8000ffff, 0x00008000, 0x00018000, 0x00017fff,
		0x3f808000, 0x3f818000, 0x3f80ffff, 0x7f7fffff, 0xff7f8000, 0x7f800000, 0xff800000,
		0x7f800001, 0x7fc00000, 0xffc00001, 0xffffffff, 0x7fffffff, 0x007fffff, 0x80400000}
	rng := rand.New(rand.NewSource(3))
	for _, n := range []int{0, 1, 15, 16, 17, 31, 32, 33, 100, 1000, 1024 + 5} {
		f := make([]float32, n)
		for i := range f {
			u := rng.Uint32()
			if rng.Intn(3) == 0 {
				u = special[rng.Intn(len(special))]
			}
			f[i] = math.Float32frombits(u)
		}
		got := make([]uint16, n)
		narrowBF16(got, f)
		for i, v := range f {
			require.Equal(t, F32ToBF16(v), got[i], "narrow, n %d, element %d (%#08x)", n, i, math.Float32bits(v))
		}
		h := make([]uint16, n)
		for i := range h {
			h[i] = uint16(rng.Uint32())
		}
		w := make([]float32, n)
		widenBF16(w, h)
		for i, v := range h {
			require.Equal(t, math.Float32bits(BF16ToF32(v)), math.Float32bits(w[i]), "widen, n %d, element %d", n, i)
		}
	}
}
