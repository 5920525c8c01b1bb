package tensor_test

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/tensor"
)

// Helpers shared with nnops_test.go (prefix nn).

// nnRand makes a float32 array of uniform values in [lo, hi) and returns the values
// (exactly as stored: rounded to float32).
func nnRand(g *graph.Graph, rng *rand.Rand, lo, hi float64, shape ...int) (tensor.Array, []float64) {
	n := 1
	for _, d := range shape {
		n *= d
	}
	v := make([]float32, n)
	f := make([]float64, n)
	for i := range v {
		v[i] = float32(lo + rng.Float64()*(hi-lo))
		f[i] = float64(v[i])
	}
	return tensor.FromFloat32(g, v, shape...), f
}

// nnVals evaluates a and returns its elements in row-major order.
func nnVals(t *testing.T, a tensor.Array) []float64 {
	t.Helper()
	v, err := a.Float64s()
	require.NoError(t, err)
	return v
}

// nnClose requires |got - want| <= tol * scale elementwise (scale 0: exact; NaN only
// where NaN is wanted).
func nnClose(t *testing.T, got, want, scale []float64, tol float64, what string) {
	t.Helper()
	require.Len(t, got, len(want), what)
	for i, w := range want {
		g := got[i]
		switch {
		case math.IsNaN(w) || math.IsNaN(g):
			require.Truef(t, math.IsNaN(w) && math.IsNaN(g), "%s [%d]: got %v, want %v", what, i, g, w)
		case scale[i] == 0 || math.IsInf(w, 0):
			require.Equalf(t, w, g, "%s [%d]", what, i)
		default:
			require.LessOrEqualf(t, math.Abs(g-w), tol*scale[i], "%s [%d]: got %v, want %v", what, i, g, w)
		}
	}
}

// nnNodes counts the graph nodes build() creates.
func nnNodes(g *graph.Graph, build func()) int {
	before := g.Stats().Nodes
	build()
	return g.Stats().Nodes - before
}

// reduceAxisRef reduces x (row-major, shape) along ax with f, which gets the values
// along the axis and returns the result and its error scale.
func reduceAxisRef(x []float64, shape []int, ax int, f func(v []float64) (float64, float64)) (want, scale []float64) {
	outer, inner := 1, 1
	for _, d := range shape[:ax] {
		outer *= d
	}
	for _, d := range shape[ax+1:] {
		inner *= d
	}
	n := shape[ax]
	v := make([]float64, n)
	for o := 0; o < outer; o++ {
		for i := 0; i < inner; i++ {
			for j := range v {
				v[j] = x[(o*n+j)*inner+i]
			}
			w, s := f(v)
			want = append(want, w)
			scale = append(scale, s)
		}
	}
	return want, scale
}

var reduceRefs = map[string]func(v []float64) (float64, float64){
	"Sum": func(v []float64) (float64, float64) {
		s, m := 0.0, 0.0
		for _, x := range v {
			s += x
			m += math.Abs(x)
		}
		return s, m
	},
	"Mean": func(v []float64) (float64, float64) {
		s, m := 0.0, 0.0
		for _, x := range v {
			s += x
			m += math.Abs(x)
		}
		return s / float64(len(v)), m / float64(len(v))
	},
	"Max": func(v []float64) (float64, float64) {
		m := math.Inf(-1)
		for _, x := range v {
			m = math.Max(m, x)
		}
		return m, 0
	},
	"Min": func(v []float64) (float64, float64) {
		m := math.Inf(1)
		for _, x := range v {
			m = math.Min(m, x)
		}
		return m, 0
	},
	"Argmax": func(v []float64) (float64, float64) {
		best := 0
		for i, x := range v {
			if x > v[best] {
				best = i
			}
		}
		return float64(best), 0
	},
	"LogSumExp": func(v []float64) (float64, float64) {
		m := math.Inf(-1)
		for _, x := range v {
			m = math.Max(m, x)
		}
		s := 0.0
		for _, x := range v {
			s += math.Exp(x - m)
		}
		r := m + math.Log(s)
		return r, math.Abs(r) + 1
	},
}

var reduceOps = map[string]func(a tensor.Array, axis int, keep bool) tensor.Array{
	"Sum": tensor.Sum, "Mean": tensor.Mean, "Max": tensor.Max, "Min": tensor.Min,
	"Argmax": tensor.Argmax, "LogSumExp": tensor.LogSumExp,
}

// TestReduceOpsMatchReference runs every reduction over every axis of odd shapes, with
// and without keepDims, on contiguous and non-contiguous (transposed, sliced) inputs.
// Go twin tolerance: one float32 rounding of the float64 result's scale.
func TestReduceOpsMatchReference(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	rng := rand.New(rand.NewSource(1))
	base, _ := nnRand(g, rng, -3, 3, 5, 4, 9)
	inputs := map[string]tensor.Array{
		"contiguous": base,
		"transposed": tensor.Transpose(base, 2, 0, 1),                             // [9, 5, 4]
		"sliced":     tensor.Slice(base, []int{1, 0, 2}, []int{5, 4, 9}, 1, 2, 3), // [4, 2, 3]
		"vector":     tensor.Reshape(base, 180),
	}
	for name, op := range reduceOps {
		for in, a := range inputs {
			x := nnVals(t, a)
			shape := a.Shape()
			for ax := -1; ax < len(shape); ax++ {
				for _, keep := range []bool{false, true} {
					what := fmt.Sprintf("%s(%s %v, axis %d, keep %v)", name, in, shape, ax, keep)
					r := op(a, ax, keep)
					norm := (ax + len(shape)) % len(shape)
					var wantShape []int // nil for a 0-d result, as Shape returns
					wantShape = append(wantShape, shape[:norm]...)
					if keep {
						wantShape = append(wantShape, 1)
					}
					wantShape = append(wantShape, shape[norm+1:]...)
					require.Equal(t, wantShape, r.Shape(), what)
					wantDT := tensor.Float32
					if name == "Argmax" {
						wantDT = tensor.Int32
					}
					require.Equal(t, wantDT, r.DType(), what)
					want, scale := reduceAxisRef(x, shape, norm, reduceRefs[name])
					nnClose(t, nnVals(t, r), want, scale, 1.2e-7, what)
				}
			}
		}
	}
}

func TestReduceOneNodeOnLastAxis(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	x, _ := nnRand(g, rand.New(rand.NewSource(2)), -1, 1, 3, 64)
	for name, op := range reduceOps {
		var r tensor.Array
		require.Equal(t, 1, nnNodes(g, func() { r = op(x, -1, false) }), name)
		require.Equal(t, 2, nnNodes(g, func() { r = op(x, 1, true) }), name+" keepDims adds a view")
		require.Equal(t, []int{3, 1}, r.Shape())
	}
}

func TestSumMeanArgmaxDTypes(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	i := tensor.FromInt32(g, []int32{7, -2, 9, 9, 1, 20000000, 20000001, -5}, 2, 4)
	b := tensor.FromBool(g, []bool{true, false, true, true, false, false, true, false}, 2, 4)
	h := tensor.FromValues(g, tensor.Float16, []float64{0.5, 1.5, -2, 3.25}, 4)

	check := func(a tensor.Array, dt tensor.DType, want []float64) {
		t.Helper()
		require.Equal(t, dt, a.DType())
		require.Equal(t, want, nnVals(t, a))
	}
	check(tensor.Sum(i, 1, false), tensor.Int32, []float64{23, 39999997})
	check(tensor.Max(i, 1, false), tensor.Int32, []float64{9, 20000001})
	check(tensor.Min(i, 0, false), tensor.Int32, []float64{1, -2, 9, -5})
	check(tensor.Argmax(i, 1, false), tensor.Int32, []float64{2, 2}) // row 0 ties: lowest index
	// Mean casts integers to float32 first (20000001 would round to 20000000).
	small := tensor.FromInt32(g, []int32{7, -2, 9, 3, 1, 6, 4, -5}, 2, 4)
	check(tensor.Mean(small, 0, false), tensor.Float32, []float64{4, 2, 6.5, -1})
	check(tensor.Sum(b, 1, false), tensor.Int32, []float64{3, 1})
	check(tensor.Max(b, 1, true), tensor.Bool, []float64{1, 1})
	check(tensor.Min(b, 0, false), tensor.Bool, []float64{0, 0, 1, 0})
	check(tensor.Argmax(b, 1, false), tensor.Int32, []float64{0, 2})
	check(tensor.Sum(h, 0, false), tensor.Float16, []float64{3.25})
	check(tensor.Max(h, 0, false), tensor.Float16, []float64{3.25})
	check(tensor.Mean(h, 0, false), tensor.Float16, []float64{0.8125})
	check(tensor.Argmax(h, 0, false), tensor.Int32, []float64{3})
}

func TestSumInt32Wraps(t *testing.T) {
	// As int32 arithmetic (and Metal, and MLX) does: 3 * 2^30 wraps to -2^30.
	g := graph.NewCPU(graph.Options{})
	i := tensor.FromInt32(g, []int32{1 << 30, 1 << 30, 1 << 30}, 3)
	require.Equal(t, []float64{-1 << 30}, nnVals(t, tensor.Sum(i, 0, false)))
}

func TestArgmaxTiesAndNaN(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	nan := float32(math.NaN())
	x := tensor.FromFloat32(g, []float32{1, 3, 2, 3, -1, nan, 5, nan, 4, 4, 4, 4}, 3, 4)
	require.Equal(t, []float64{1, 1, 0}, nnVals(t, tensor.Argmax(x, -1, false)))
	m := nnVals(t, tensor.Max(x, -1, false))
	require.Equal(t, 3.0, m[0])
	require.True(t, math.IsNaN(m[1]), "max propagates NaN")
	require.Equal(t, 4.0, m[2])
}

func TestLogSumExpExtremes(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	inf := float32(math.Inf(1))
	x := tensor.FromFloat32(g, []float32{1000, 1000, -inf, -inf, -inf, -inf, 1, inf, -1000, -1000}, 5, 2)
	got := nnVals(t, tensor.LogSumExp(x, 1, false))
	require.InDelta(t, 1000+math.Ln2, got[0], 1e-4, "no overflow")
	require.Equal(t, math.Inf(-1), got[1], "all -Inf")
	require.Equal(t, math.Inf(-1), got[2])
	require.Equal(t, math.Inf(1), got[3], "+Inf")
	require.InDelta(t, -1000+math.Ln2, got[4], 1e-4, "no underflow")
}

func TestReduceShapeErrors(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	x := tensor.FromFloat32(g, []float32{1, 2, 3, 4, 5, 6}, 2, 3)
	s := tensor.Scalar(g, 1, tensor.Float32)
	e := tensor.Zeros(g, tensor.Float32, 2, 0)
	cases := []struct {
		f    func()
		want string
	}{
		{func() { tensor.Sum(x, 2, false) }, "tensor: sum: axis 2 out of range for rank 2"},
		{func() { tensor.Mean(x, -3, true) }, "tensor: mean: axis -3 out of range for rank 2"},
		{func() { tensor.Max(s, 0, false) }, "tensor: max: needs an axis; the array is 0-d"},
		{func() { tensor.Argmax(e, 1, false) }, "tensor: argmax: axis 1 of [2 0] is empty"},
		{func() { tensor.LogSumExp(tensor.Array{}, 0, false) }, "tensor: logsumexp: invalid array"},
	}
	for _, c := range cases {
		require.PanicsWithError(t, c.want, c.f)
	}
	// Reducing an empty axis is defined for the others.
	require.Equal(t, []float64{0, 0}, nnVals(t, tensor.Sum(e, 1, false)))
	require.Equal(t, []float64{math.Inf(-1), math.Inf(-1)}, nnVals(t, tensor.Max(e, 1, false)))
	require.Equal(t, []int{0}, tensor.Sum(e, 0, false).Shape())
}
