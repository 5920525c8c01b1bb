package kernels

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestQuantizeRefusesNonFinite: a NaN or infinite weight is an error naming its row
// and column, never a code too wide for its bits (which panicked in putBits).
func TestQuantizeRefusesNonFinite(t *testing.T) {
	for _, v := range []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())} {
		w := make([]float32, 2*64)
		for i := range w {
			w[i] = float32(i%7) - 3
		}
		w[64+5] = v
		for _, bits := range []int{2, 3, 4, 5, 6, 8} {
			_, _, _, err := Quantize(w, 2, 64, bits, 32)
			require.ErrorIs(t, err, ErrNonFinite)
			require.EqualError(t, err, "row 1, column 5 holds "+fmtF(v)+": non-finite weight")
		}
	}
}

func fmtF(v float32) string {
	switch {
	case math.IsNaN(float64(v)):
		return "NaN"
	case v > 0:
		return "+Inf"
	}
	return "-Inf"
}
