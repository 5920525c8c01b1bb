package kernels_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/kernels"
)

// convRef is the depthwise cross-correlation in float64.
func convRef(b, t, c, k int, x, w []float64) []float64 {
	tout := t - k + 1
	out := make([]float64, b*tout*c)
	for bi := 0; bi < b; bi++ {
		for ti := 0; ti < tout; ti++ {
			for ci := 0; ci < c; ci++ {
				var s float64
				for j := 0; j < k; j++ {
					s += w[ci*k+j] * x[(bi*t+ti+j)*c+ci]
				}
				out[(bi*tout+ti)*c+ci] = s
			}
		}
	}
	return out
}

// TestDepthwiseConv1dSamplesMatchReference runs the Go twin on the registered samples.
// Float32 results agree to float32 rounding; half results are the float32 sum rounded
// once to the output type (half a unit in the last place, relative).
func TestDepthwiseConv1dSamplesMatchReference(t *testing.T) {
	halfULP := map[kernels.DType]float64{kernels.Float32: 0, kernels.Float16: 0x1p-11, kernels.BFloat16: 0x1p-8}
	seen := map[kernels.DType]bool{}
	decode := false
	for _, l := range rnnSamples(t, "conv") {
		x, w, o := &l.Args[0], &l.Args[1], l.Out()
		b, tt, c, k := x.Shape[0], x.Shape[1], x.Shape[2], w.Shape[1]
		want := convRef(b, tt, c, k, rnnArgF64(x), rnnArgF64(w))
		kernels.Run(l)
		got := rnnArgF64(o)
		require.Len(t, got, len(want))
		scale := 0.0
		for _, v := range want {
			scale = max(scale, math.Abs(v))
		}
		for i := range want {
			require.False(t, math.IsNaN(got[i]), "element %d not written", i)
			tol := halfULP[o.DType]*math.Abs(want[i]) + 1e-6*scale
			require.InDelta(t, want[i], got[i], tol, "%s x %v w %v element %d", o.DType, x.Dims(), w.Dims(), i)
		}
		seen[o.DType] = true
		decode = decode || (k == 4 && tt == 4)
	}
	assert.Len(t, seen, 3, "samples cover float32, float16 and bfloat16")
	assert.True(t, decode, "samples cover the decode shape T = K = 4")
}

func TestDepthwiseConv1dEncode(t *testing.T) {
	for _, l := range rnnSamples(t, "conv") {
		x, w, o := &l.Args[0], &l.Args[1], l.Out()
		r := newRNNRecorder()
		l.Kernel.Encode(l, r)
		require.Equal(t, "depthwise_conv1d_"+o.DType.String(), r.entry)
		require.Same(t, x, r.args[0])
		require.Same(t, w, r.args[1])
		require.Same(t, o, r.args[2])
		require.Len(t, r.args, 3)
		tout := x.Shape[1] - w.Shape[1] + 1
		require.Equal(t, []int32{int32(x.Shape[0]), int32(x.Shape[1]), int32(x.Shape[2]), int32(w.Shape[1]), int32(tout)},
			rnnInt32s(r.bytes[3]))
		n := x.Shape[0] * tout * x.Shape[2]
		require.Equal(t, "threads", r.dispatch)
		require.Equal(t, [3]int{n, 1, 1}, r.grid)
		require.Equal(t, [3]int{min(n, 256), 1, 1}, r.group)
	}
}
