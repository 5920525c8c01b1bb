package kernels

import (
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGateSiluMatchesDefinition: gateSilu gives the Go loop's float32 bit for bit at
// every length, on random gates over the whole exponent range and at the edges of
// expF64's range (-104 and 89, their neighbours), infinities, NaNs, zeros of both signs
// and subnormals.
func TestGateSiluMatchesDefinition(t *testing.T) {
	special := []float32{0, float32(math.Copysign(0, -1)), 1, -1, 104, -104, 103.99999, 104.00001,
		89, -89, 89.00001, -89.00001, 88.99999, -88.99999, 1e-40, -1e-40, float32(math.Inf(1)),
		float32(math.Inf(-1)), float32(math.NaN()), math.MaxFloat32, -math.MaxFloat32, 0.5, -20, 20}
	rng := rand.New(rand.NewSource(5))
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 100, 2048 + 3} {
		z := make([]float32, n)
		y := make([]float32, n)
		for i := range z {
			switch rng.Intn(4) {
			case 0:
				z[i] = special[rng.Intn(len(special))]
			case 1:
				z[i] = math.Float32frombits(rng.Uint32())
			default:
				z[i] = float32(rng.NormFloat64() * 8)
			}
			y[i] = float32(rng.NormFloat64())
		}
		want := append([]float32(nil), y...)
		for i := range want {
			g := float64(z[i])
			want[i] *= float32(g / (1 + expF64(-g)))
		}
		gateSilu(y, z)
		for i := range y {
			require.Equal(t, math.Float32bits(want[i]), math.Float32bits(y[i]), "n %d, element %d: gate %g (%#x)", n, i, z[i], math.Float32bits(z[i]))
		}
	}
}
