package kernels_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/kernels"
)

// softmaxRef is the float64 softmax of each row; errors scale with each probability.
func softmaxRef(l *kernels.Launch) ref {
	in := &l.Args[0]
	var r ref
	for _, x := range rows(dense(in), in.Shape[in.NDim-1]) {
		m := math.Inf(-1)
		for _, v := range x {
			m = math.Max(m, v)
		}
		s := 0.0
		for _, v := range x {
			s += math.Exp(v - m)
		}
		for _, v := range x {
			p := math.Exp(v-m) / s
			r.want = append(r.want, p)
			r.scale = append(r.scale, p)
		}
	}
	return r
}

// TestSoftmaxTwins: Go twin within 3 float32 roundings of each probability (exp and sum
// in float64); the MSL twin within 16 epsilons (x - max rounded in float, exp, a float
// tree sum).
func TestSoftmaxTwins(t *testing.T) {
	checkTwins(t, "softmax", softmaxRef, 2e-7, 2e-6)
}

func TestSoftmaxInPlaceAndSpecialRows(t *testing.T) {
	inf := float32(math.Inf(1))
	x := []float32{1, 2, 3, -inf, 0, 0, 0, 0, float32(math.NaN()), 1, 2, 3, -inf, -inf, -inf, -inf}
	a := kernels.NewArg(kernels.Contiguous(kernels.Float32, 4, 4))
	copy(kernels.F32(a.Data), x)
	l := &kernels.Launch{Kernel: kernels.KSoftmax, NArgs: 2}
	l.Args[0], l.Args[1] = a, a // the output reuses the input's buffer, as donation does
	kernels.Run(l)
	got := kernels.F32(a.Data)[:16]
	e := math.Exp
	s := e(1) + e(2) + e(3)
	for i, w := range []float64{e(1) / s, e(2) / s, e(3) / s, 0, .25, .25, .25, .25} {
		require.InDelta(t, w, float64(got[i]), 1e-7, "element %d", i)
	}
	for i := 8; i < 16; i++ {
		require.True(t, math.IsNaN(float64(got[i])), "a NaN or all -Inf row gives NaN, element %d = %v", i, got[i])
	}
}
