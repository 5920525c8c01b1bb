package tensor_test

import (
	"math"
	"math/rand"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/internal/oobcheck"
	"github.com/ingotml/ingot/tensor"
)

// ixResolve is the documented index rule: wrap once from the end, else out of range (-1).
func ixResolve(i int32, n int) int {
	j := int(i)
	if j < 0 {
		j += n
	}
	if j < 0 || j >= n {
		return -1
	}
	return j
}

func ixProd(s []int) int {
	n := 1
	for _, d := range s {
		n *= d
	}
	return n
}

// ixTakeRef is the reference of Take on row-major values av of shape as.
func ixTakeRef(av []float64, as []int, ids []int32, ax int) []float64 {
	outer, n, inner := ixProd(as[:ax]), as[ax], ixProd(as[ax+1:])
	var out []float64
	for o := 0; o < outer; o++ {
		for _, i := range ids {
			k := ixResolve(i, n)
			for p := 0; p < inner; p++ {
				v := 0.0
				if k >= 0 {
					v = av[(o*n+k)*inner+p]
				}
				out = append(out, v)
			}
		}
	}
	return out
}

func TestTake(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	rng := rand.New(rand.NewSource(31))
	table := laRand(g, rng, 10, 6)
	a3 := laRand(g, rng, 3, 4, 5)
	tr := tensor.Transpose(laRand(g, rng, 4, 6)) // [6, 4], not dense
	cases := []struct {
		name  string
		a     tensor.Array
		ids   []int32
		ishp  []int
		ax    int
		shape []int
	}{
		{"embedding lookup", table, []int32{3, 0, 9, 3, 7, 1}, []int{2, 3}, 0, []int{2, 3, 6}},
		{"negative axis", a3, []int32{4, 0}, []int{2}, -1, []int{3, 4, 2}},
		{"middle axis, 2-D indices", a3, []int32{1, 3, 0, 2, 2, 1}, []int{3, 2}, 1, []int{3, 3, 2, 5}},
		{"filter rows", table, []int32{8, 2}, []int{2}, -2, []int{2, 6}},
		{"transposed input axis 0", tr, []int32{5, 0, 2}, []int{3}, 0, []int{3, 4}},
		{"transposed input axis 1", tr, []int32{3, 1}, []int{2}, 1, []int{6, 2}},
		{"negative indices", table, []int32{-1, -10, 9, -3, 0, 4}, []int{6}, 0, []int{6, 6}},
		{"0-d index drops the axis", a3, []int32{2}, nil, 1, []int{3, 5}},
	}
	for _, c := range cases {
		y := tensor.Take(c.a, tensor.FromInt32(g, c.ids, c.ishp...), c.ax)
		require.Equal(t, c.shape, y.Shape(), c.name)
		ax := c.ax
		if ax < 0 {
			ax += c.a.NDim()
		}
		want := ixTakeRef(laValues(t, c.a), c.a.Shape(), c.ids, ax)
		require.Equal(t, want, laValues(t, y), c.name)
	}
}

func TestTakeOtherDTypes(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	ints := tensor.FromInt32(g, []int32{10, 11, 12, 13, 14, 15}, 3, 2)
	idx := tensor.FromInt32(g, []int32{2, -3, -1}, 3)
	got, err := tensor.Take(ints, idx, 0).Int32s()
	require.NoError(t, err)
	require.Equal(t, []int32{14, 15, 10, 11, 14, 15}, got)

	bools := tensor.FromBool(g, []bool{true, false, false, true}, 4)
	bv, err := tensor.Take(bools, tensor.FromInt32(g, []int32{3, 2, 0, -3}, 4), 0).Bools()
	require.NoError(t, err)
	require.Equal(t, []bool{true, false, true, false}, bv)

	half := tensor.FromFloat32(g, []float32{0.5, -1.25, 3}, 3).AsType(tensor.Float16)
	hv, err := tensor.Take(half, tensor.FromInt32(g, []int32{1, 1, 2}, 3).AsType(tensor.UInt32), 0).Float32s()
	require.NoError(t, err)
	require.Equal(t, []float32{-1.25, -1.25, 3}, hv)
}

// TestOutOfRangeIndexIsAnError: a token id outside the vocabulary is an error carried by
// the lookup and everything computed from it, never a silent zero row; arrays that do
// not depend on it still evaluate (internal/oobcheck, which metal runs too).
func TestOutOfRangeIndexIsAnError(t *testing.T) {
	oobcheck.Run(t, graph.NewCPU(graph.Options{}), "graph: cpu kernel")
}

func TestTakeShapeErrors(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	a := tensor.Zeros(g, tensor.Float32, 2, 3)
	require.PanicsWithError(t, "tensor: take: indices must be int32 or uint32, got float32",
		func() { tensor.Take(a, tensor.Zeros(g, tensor.Float32, 2), 0) })
	require.PanicsWithError(t, "tensor: axis: axis 2 out of range for rank 2",
		func() { tensor.Take(a, tensor.Zeros(g, tensor.Int32, 2), 2) })
	require.PanicsWithError(t, "tensor: take: cannot index a 0-d array",
		func() { tensor.Take(tensor.Scalar(g, 1, tensor.Float32), tensor.Zeros(g, tensor.Int32, 2), 0) })
}

// ixTakeAlongRef is the reference of TakeAlongAxis for a and idx already of the result's
// shape off axis (no broadcasting), row-major.
func ixTakeAlongRef(av []float64, as []int, ids []int32, is []int, ax int) []float64 {
	outer, n, m, inner := ixProd(is[:ax]), as[ax], is[ax], ixProd(is[ax+1:])
	out := make([]float64, 0, len(ids))
	for o := 0; o < outer; o++ {
		for j := 0; j < m; j++ {
			for p := 0; p < inner; p++ {
				v := 0.0
				if k := ixResolve(ids[(o*m+j)*inner+p], n); k >= 0 {
					v = av[(o*n+k)*inner+p]
				}
				out = append(out, v)
			}
		}
	}
	return out
}

func TestTakeAlongAxis(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	rng := rand.New(rand.NewSource(32))
	a := laRand(g, rng, 4, 5, 3)
	ids := make([]int32, 4*2*3)
	for i := range ids {
		ids[i] = int32(rng.Intn(10) - 5) // every valid index of an axis of 5, half negative
	}
	for _, ax := range []int{1, -2} {
		y := tensor.TakeAlongAxis(a, tensor.FromInt32(g, ids, 4, 2, 3), ax)
		require.Equal(t, []int{4, 2, 3}, y.Shape())
		require.Equal(t, ixTakeAlongRef(laValues(t, a), a.Shape(), ids, []int{4, 2, 3}, 1), laValues(t, y))
	}
	// Axis 0 of a transposed view.
	at := tensor.Transpose(a, 1, 0, 2) // [5, 4, 3]
	ids0 := ids[:2*4*3]
	y := tensor.TakeAlongAxis(at, tensor.FromInt32(g, ids0, 2, 4, 3), 0)
	require.Equal(t, ixTakeAlongRef(laValues(t, at), at.Shape(), ids0, []int{2, 4, 3}, 0), laValues(t, y))
}

func TestTakeAlongAxisBroadcasts(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	rng := rand.New(rand.NewSource(33))
	a := laRand(g, rng, 4, 5, 3)
	// idx [1, 2, 3] broadcasts over a's first dim; the same indices for every row.
	ids := []int32{0, 4, 2, 1, 3, 3}
	y := tensor.TakeAlongAxis(a, tensor.FromInt32(g, ids, 1, 2, 3), 1)
	require.Equal(t, []int{4, 2, 3}, y.Shape())
	full := append(append(append(append([]int32{}, ids...), ids...), ids...), ids...)
	require.Equal(t, ixTakeAlongRef(laValues(t, a), a.Shape(), full, []int{4, 2, 3}, 1), laValues(t, y))

	// a [4, 5, 1] broadcasts against idx [4, 2, 3] off the axis.
	a1 := laRand(g, rng, 4, 5, 1)
	ids2 := make([]int32, 4*2*3)
	for i := range ids2 {
		ids2[i] = int32(rng.Intn(5))
	}
	y2 := tensor.TakeAlongAxis(a1, tensor.FromInt32(g, ids2, 4, 2, 3), 1)
	require.Equal(t, []int{4, 2, 3}, y2.Shape())
	av := laValues(t, a1)
	wide := make([]float64, 0, 60)
	for i := 0; i < 20; i++ {
		wide = append(wide, av[i], av[i], av[i])
	}
	require.Equal(t, ixTakeAlongRef(wide, []int{4, 5, 3}, ids2, []int{4, 2, 3}, 1), laValues(t, y2))

	require.PanicsWithError(t, "tensor: take_along_axis: indices [4 2] must have the rank of [4 5 3]",
		func() { tensor.TakeAlongAxis(a, tensor.Zeros(g, tensor.Int32, 4, 2), 1) })
	require.PanicsWithError(t, "tensor: take_along_axis: indices [3 2 3] do not broadcast with [4 5 3] off axis 1",
		func() { tensor.TakeAlongAxis(a, tensor.Zeros(g, tensor.Int32, 3, 2, 3), 1) })
}

// ixTopKRef is a stable descending sort of each row's indices (NaN last).
func ixTopKRef(v []float64, n, k int) []int32 {
	var out []int32
	for r := 0; r < len(v)/n; r++ {
		row := v[r*n : (r+1)*n]
		ids := make([]int32, n)
		for i := range ids {
			ids[i] = int32(i)
		}
		sort.SliceStable(ids, func(a, b int) bool {
			va, vb := row[ids[a]], row[ids[b]]
			if math.IsNaN(va) {
				return false
			}
			return math.IsNaN(vb) || va > vb
		})
		out = append(out, ids[:k]...)
	}
	return out
}

func TestArgTopK(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	rng := rand.New(rand.NewSource(34))
	rounded := func(rows, n int) tensor.Array { // few distinct values: many ties
		v := make([]float32, rows*n)
		for i := range v {
			v[i] = float32(rng.Intn(5)-2) / 3
		}
		return tensor.FromFloat32(g, v, rows, n)
	}
	cases := []struct {
		name string
		a    tensor.Array
		k    int
	}{
		{"router 2 of 8", laRand(g, rng, 5, 8), 2},
		{"ties", rounded(6, 9), 4},
		{"k = n", rounded(3, 7), 7},
		{"k = 1, 3-D", laRand(g, rng, 2, 3, 11), 1},
		{"limits 64 of 1024", laRand(g, rng, 2, 1024), 64},
		{"transposed input", tensor.Transpose(laRand(g, rng, 8, 5)), 3},
		{"float16 input", laRand(g, rng, 4, 8).AsType(tensor.Float16), 2},
	}
	for _, c := range cases {
		y := tensor.ArgTopK(c.a, c.k)
		shape := c.a.Shape()
		shape[len(shape)-1] = c.k
		require.Equal(t, shape, y.Shape(), c.name)
		require.Equal(t, tensor.Int32, y.DType(), c.name)
		got, err := y.Int32s()
		require.NoError(t, err)
		require.Equal(t, ixTopKRef(laValues(t, c.a), c.a.Dim(-1), c.k), got, c.name)
	}
}

func TestArgTopKTiesAndNaN(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	nan := float32(math.NaN())
	a := tensor.FromFloat32(g, []float32{
		1, 3, 3, 0, 3, 1,
		nan, 2, nan, 2, -1, 0,
	}, 2, 6)
	got, err := tensor.ArgTopK(a, 5).Int32s()
	require.NoError(t, err)
	require.Equal(t, []int32{1, 2, 4, 0, 5, 1, 3, 5, 4, 0}, got)
}

// TestArgTopKThenTakeAlongAxis is the MoE router pattern: pick the top-2 experts, then
// gather their scores.
func TestArgTopKThenTakeAlongAxis(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	probs := tensor.FromFloat32(g, []float32{
		.1, .4, .05, .2, .1, .1, .04, .01,
		.3, .1, .1, .1, .1, .1, .1, .1,
	}, 2, 8)
	idx := tensor.ArgTopK(probs, 2)
	w, err := tensor.TakeAlongAxis(probs, idx, -1).Float32s()
	require.NoError(t, err)
	ids, err := idx.Int32s()
	require.NoError(t, err)
	require.Equal(t, []int32{1, 3, 0, 1}, ids)
	require.Equal(t, []float32{.4, .2, .3, .1}, w)
}

func TestArgTopKShapeErrors(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	a := tensor.Zeros(g, tensor.Float32, 3, 8)
	require.PanicsWithError(t, "tensor: argtopk: k 9 out of range for last axis 8 (1..min(n, 64))",
		func() { tensor.ArgTopK(a, 9) })
	require.PanicsWithError(t, "tensor: argtopk: k 0 out of range for last axis 8 (1..min(n, 64))",
		func() { tensor.ArgTopK(a, 0) })
	require.PanicsWithError(t, "tensor: argtopk: k 65 out of range for last axis 100 (1..min(n, 64))",
		func() { tensor.ArgTopK(tensor.Zeros(g, tensor.Float32, 100), 65) })
	require.PanicsWithError(t, "tensor: argtopk: cannot take the top k of a 0-d array",
		func() { tensor.ArgTopK(tensor.Scalar(g, 1, tensor.Float32), 1) })
}
