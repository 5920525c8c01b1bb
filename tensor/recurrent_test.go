package tensor_test

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/kernels"
	"github.com/ingotml/ingot/tensor"
)

func rnnRand(rng *rand.Rand, n int, lo, hi float64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(lo + rng.Float64()*(hi-lo))
	}
	return v
}

// rnnUnit returns rows of length d with norm scale, as the model's normalised q and k.
func rnnUnit(rng *rand.Rand, rows, d int, scale float64) []float32 {
	v := make([]float32, rows*d)
	for r := 0; r < rows; r++ {
		var ss float64
		for i := 0; i < d; i++ {
			x := rng.NormFloat64()
			v[r*d+i] = float32(x)
			ss += x * x
		}
		for i := 0; i < d; i++ {
			v[r*d+i] = float32(float64(v[r*d+i]) * scale / math.Sqrt(ss))
		}
	}
	return v
}

func rnnF64s(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(x)
	}
	return out
}

// rnnNormErr is max |got-want| over max |want|: float32 rounding relative to the array's
// scale (per-element ratios blow up on entries that cancel to near 0).
func rnnNormErr(t *testing.T, got []float32, want []float64) float64 {
	t.Helper()
	require.Len(t, got, len(want))
	scale, worst := 0.0, 0.0
	for i, w := range want {
		require.False(t, math.IsNaN(float64(got[i])), "element %d not written", i)
		scale = max(scale, math.Abs(w))
		worst = max(worst, math.Abs(float64(got[i])-w))
	}
	require.Positive(t, scale, "an all-zero reference checks nothing")
	return worst / scale
}

func rnnEval(t *testing.T, a tensor.Array) []float32 {
	t.Helper()
	v, err := a.Float32s()
	require.NoError(t, err)
	return v
}

func TestDepthwiseConv1dMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	for _, c := range []struct{ b, t, ch, k int }{
		{1, 4, 128, 4}, {2, 13, 37, 4}, {3, 5, 7, 1}, {1, 6, 6, 6}, {2, 9, 3, 3},
	} {
		t.Run(fmt.Sprintf("B%d_T%d_C%d_K%d", c.b, c.t, c.ch, c.k), func(t *testing.T) {
			g := graph.NewCPU(graph.Options{})
			// x arrives as a slice of a longer [B, T+3, C] sequence and w as the transpose of
			// a [K, C] array: the op must densify both.
			xv := rnnRand(rng, c.b*(c.t+3)*c.ch, -2, 2)
			wv := rnnRand(rng, c.k*c.ch, -1, 1)
			xBig := tensor.FromFloat32(g, xv, c.b, c.t+3, c.ch)
			x := tensor.SliceAxis(xBig, 1, 2, 2+c.t)
			w := tensor.Transpose(tensor.FromFloat32(g, wv, c.k, c.ch))
			tout := c.t - c.k + 1
			want := make([]float64, c.b*tout*c.ch)
			for b := 0; b < c.b; b++ {
				for i := 0; i < tout; i++ {
					for ch := 0; ch < c.ch; ch++ {
						var s float64
						for j := 0; j < c.k; j++ {
							s += float64(wv[j*c.ch+ch]) * float64(xv[(b*(c.t+3)+2+i+j)*c.ch+ch])
						}
						want[(b*tout+i)*c.ch+ch] = s
					}
				}
			}
			y := tensor.DepthwiseConv1d(x, w)
			require.Equal(t, []int{c.b, tout, c.ch}, y.Shape())
			require.Equal(t, tensor.Float32, y.DType())
			require.Less(t, rnnNormErr(t, rnnEval(t, y), want), 1e-6)

			// Half inputs give a half output within half a unit in the last place.
			yh := tensor.DepthwiseConv1d(x.AsType(tensor.Float16), w.AsType(tensor.Float16))
			require.Equal(t, tensor.Float16, yh.DType())
			got := rnnEval(t, yh)
			xr := rnnRoundF16(xv)
			wr := rnnRoundF16(wv)
			for b := 0; b < c.b; b++ {
				for i := 0; i < tout; i++ {
					for ch := 0; ch < c.ch; ch++ {
						var s float64
						for j := 0; j < c.k; j++ {
							s += wr[j*c.ch+ch] * xr[(b*(c.t+3)+2+i+j)*c.ch+ch]
						}
						o := (b*tout+i)*c.ch + ch
						require.InDelta(t, s, float64(got[o]), 0x1p-11*math.Abs(s)+1e-6, "element %d", o)
					}
				}
			}
		})
	}
}

func rnnRoundF16(v []float32) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = float64(kernels.F16ToF32(kernels.F32ToF16(x)))
	}
	return out
}

func TestDepthwiseConv1dPromotes(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	x := tensor.FromFloat32(g, []float32{1, 2, 3, 4, 5, 6}, 1, 3, 2)
	w := tensor.FromValues(g, tensor.Float16, []float64{1, 0.5, 2, -1}, 2, 2)
	y := tensor.DepthwiseConv1d(x, w)
	require.Equal(t, tensor.Float32, y.DType())
	// out[t, c] = w[c,0]*x[t,c] + w[c,1]*x[t+1,c]
	require.Equal(t, []float32{1*1 + 0.5*3, 2*2 - 1*4, 1*3 + 0.5*5, 2*4 - 1*6}, rnnEval(t, y))
	xi := tensor.FromInt32(g, []int32{1, 2, 3}, 1, 3, 1)
	wi := tensor.FromInt32(g, []int32{2, 3}, 1, 2)
	yi := tensor.DepthwiseConv1d(xi, wi)
	require.Equal(t, tensor.Float32, yi.DType())
	require.Equal(t, []float32{2*1 + 3*2, 2*2 + 3*3}, rnnEval(t, yi))
}

func TestRecurrentShapeErrors(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	z := func(shape ...int) tensor.Array { return tensor.Zeros(g, tensor.Float32, shape...) }
	q := z(1, 2, 2, 16)
	v := z(1, 2, 4, 8)
	gb := z(1, 2, 4)
	st := z(1, 4, 8, 16)
	for _, c := range []struct {
		name string
		f    func()
		msg  string
	}{
		{"conv rank", func() { tensor.DepthwiseConv1d(z(4, 3), z(3, 2)) },
			"tensor: depthwise_conv1d: x [4 3] must be [B, T, C] and w [3 2] [C, K]"},
		{"conv short", func() { tensor.DepthwiseConv1d(z(1, 3, 5), z(5, 4)) },
			"tensor: depthwise_conv1d: x [1 3 5] and w [5 4]: need w [C, K] with 1 <= K <= T"},
		{"conv channels", func() { tensor.DepthwiseConv1d(z(1, 4, 5), z(6, 4)) },
			"tensor: depthwise_conv1d: x [1 4 5] and w [6 4]: need w [C, K] with 1 <= K <= T"},
		{"heads", func() { tensor.GatedDelta(z(1, 2, 3, 16), z(1, 2, 3, 16), v, gb, gb, st, tensor.Array{}) },
			"tensor: gated_delta: value heads 4 are not a multiple of key heads 3"},
		{"k", func() { tensor.GatedDelta(q, z(1, 2, 2, 8), v, gb, gb, st, tensor.Array{}) },
			"tensor: gated_delta: k [1 2 2 8] differs from q [1 2 2 16]"},
		{"v", func() { tensor.GatedDelta(q, q, z(1, 3, 4, 8), gb, gb, st, tensor.Array{}) },
			"tensor: gated_delta: v [1 3 4 8] does not match q [1 2 2 16] in [B, T]"},
		{"g", func() { tensor.GatedDelta(q, q, v, z(1, 2, 2), gb, st, tensor.Array{}) },
			"tensor: gated_delta: g [1 2 2] and beta [1 2 4] must be [B, T, Hv] = [1 2 4]"},
		{"state", func() { tensor.GatedDelta(q, q, v, gb, gb, z(1, 4, 16, 8), tensor.Array{}) },
			"tensor: gated_delta: state [1 4 16 8] must be [B, Hv, Dv, Dk] = [1 4 8 16]"},
		{"mask", func() { tensor.GatedDelta(q, q, v, gb, gb, st, z(2, 1)) },
			"tensor: gated_delta: mask [2 1] must be [B, T] = [1 2]"},
		{"dk", func() {
			big := z(1, 1, 1, 288)
			tensor.GatedDelta(big, big, z(1, 1, 1, 2), z(1, 1, 1), z(1, 1, 1), z(1, 1, 2, 288), tensor.Array{})
		}, "tensor: gated_delta: key head size 288 exceeds 256"},
		{"rank", func() { tensor.GatedDelta(z(2, 16), q, v, gb, gb, st, tensor.Array{}) },
			"tensor: gated_delta: q [2 16] and v [1 2 4 8] must be [B, T, H, D]"},
		{"invalid", func() { tensor.GatedDelta(q, tensor.Array{}, v, gb, gb, st, tensor.Array{}) },
			"tensor: gated_delta: invalid array"},
	} {
		t.Run(c.name, func(t *testing.T) {
			defer func() {
				r := recover()
				se, ok := r.(*tensor.ShapeError)
				require.True(t, ok, "panic value %v", r)
				require.Equal(t, c.msg, se.Error())
			}()
			c.f()
		})
	}
}
