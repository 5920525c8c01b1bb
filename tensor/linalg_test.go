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

// laRand makes a float32 array of shape with uniform values in [-1, 1) (never all zero).
func laRand(g *graph.Graph, rng *rand.Rand, shape ...int) tensor.Array {
	n := 1
	for _, d := range shape {
		n *= d
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.Float64()*2 - 1)
	}
	return tensor.FromFloat32(g, v, shape...)
}

// laValues evaluates a and returns its elements (row-major) as float64.
func laValues(t *testing.T, a tensor.Array) []float64 {
	t.Helper()
	v, err := a.Float64s()
	require.NoError(t, err)
	return v
}

// laStrides is the row-major strides of shape.
func laStrides(shape []int) []int {
	st := make([]int, len(shape))
	s := 1
	for i := len(shape) - 1; i >= 0; i-- {
		st[i] = s
		s *= shape[i]
	}
	return st
}

// laMatmulRef is a float64 numpy-style matmul of row-major a [..., M, K] and
// b [..., K, N] (both at least 2-D), with the per-element sum of |terms|.
func laMatmulRef(av []float64, as []int, bv []float64, bs []int) (out, scale []float64, shape []int) {
	m, k, n := as[len(as)-2], as[len(as)-1], bs[len(bs)-1]
	ab, bb := as[:len(as)-2], bs[:len(bs)-2]
	nd := max(len(ab), len(bb))
	batch := make([]int, nd)
	for i := range batch {
		da, db := 1, 1
		if j := i - (nd - len(ab)); j >= 0 {
			da = ab[j]
		}
		if j := i - (nd - len(bb)); j >= 0 {
			db = bb[j]
		}
		batch[i] = max(da, db)
	}
	// offset of batch index bi in an operand with batch dims own (broadcast: index 0).
	off := func(bi []int, own []int, mat int) int {
		st := laStrides(own)
		o := 0
		for i := range own {
			if own[i] != 1 {
				o += bi[i+nd-len(own)] * st[i]
			}
		}
		return o * mat
	}
	nb := 1
	for _, d := range batch {
		nb *= d
	}
	bi := make([]int, nd)
	for q := 0; q < nb; q++ {
		r := q
		for i := nd - 1; i >= 0; i-- {
			bi[i] = r % batch[i]
			r /= batch[i]
		}
		ao, bo := off(bi, ab, m*k), off(bi, bb, k*n)
		for i := 0; i < m; i++ {
			for j := 0; j < n; j++ {
				var s, sc float64
				for p := 0; p < k; p++ {
					t := av[ao+i*k+p] * bv[bo+p*n+j]
					s += t
					sc += math.Abs(t)
				}
				out, scale = append(out, s), append(scale, sc)
			}
		}
	}
	return out, scale, append(batch, m, n)
}

// laCheck compares float32 results with float64 references: the error is measured
// against each dot's scale (sum of |terms|) and must stay under tol of it (1e-6 for
// float32 arithmetic), plus round relative to the value for a half-precision output.
func laCheck(t *testing.T, what string, got []float64, want, scale []float64, tol, round float64) {
	t.Helper()
	require.Len(t, got, len(want), what)
	for i := range want {
		require.Falsef(t, math.IsNaN(got[i]), "%s: element %d is NaN", what, i)
		lim := tol*scale[i] + round*math.Abs(want[i]) + 1e-30
		require.LessOrEqualf(t, math.Abs(got[i]-want[i]), lim, "%s: element %d: got %v want %v", what, i, got[i], want[i])
	}
}

// laLinearRef is x @ w^T by the matmul reference on a transposed copy of w.
func laLinearRef(t *testing.T, x, w tensor.Array) (out, scale []float64) {
	xs, ws := x.Shape(), w.Shape()
	k, n := ws[1], ws[0]
	wv := laValues(t, w)
	wt := make([]float64, len(wv))
	for i := 0; i < n; i++ {
		for p := 0; p < k; p++ {
			wt[p*n+i] = wv[i*k+p]
		}
	}
	m := 1
	for _, d := range xs[:len(xs)-1] {
		m *= d
	}
	out, scale, _ = laMatmulRef(laValues(t, x), []int{m, k}, wt, []int{k, n})
	return out, scale
}

func TestLinear(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	rng := rand.New(rand.NewSource(21))
	base := laRand(g, rng, 8, 13) // for views
	cases := []struct {
		name  string
		x, w  tensor.Array
		shape []int
	}{
		{"decode 1x64 @ (192x64)^T", laRand(g, rng, 1, 64), laRand(g, rng, 192, 64), []int{1, 192}},
		{"decode 1x64 @ (64x64)^T", laRand(g, rng, 1, 64), laRand(g, rng, 64, 64), []int{1, 64}},
		{"prefill 100x64", laRand(g, rng, 100, 64), laRand(g, rng, 192, 64), []int{100, 192}},
		{"batched odd", laRand(g, rng, 3, 5, 13), laRand(g, rng, 7, 13), []int{3, 5, 7}},
		{"vector", laRand(g, rng, 13), laRand(g, rng, 7, 13), []int{7}},
		{"K=1", laRand(g, rng, 2, 3, 1), laRand(g, rng, 4, 1), []int{2, 3, 4}},
		{"transposed x", tensor.Transpose(laRand(g, rng, 13, 5)), laRand(g, rng, 9, 13), []int{5, 9}},
		{"sliced x (offset)", tensor.SliceAxis(base, 0, 2, 7), laRand(g, rng, 6, 13), []int{5, 6}},
		{"transposed w", laRand(g, rng, 4, 11), tensor.Transpose(laRand(g, rng, 11, 6)), []int{4, 6}},
	}
	for _, c := range cases {
		y := tensor.Linear(c.x, c.w)
		require.Equal(t, c.shape, y.Shape(), c.name)
		want, scale := laLinearRef(t, c.x, c.w)
		laCheck(t, c.name, laValues(t, y), want, scale, 1e-6, 0)
	}
}

func TestLinearEmptyK(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	y := tensor.Linear(tensor.FromFloat32(g, nil, 2, 0), tensor.FromFloat32(g, nil, 3, 0))
	require.Equal(t, []float64{0, 0, 0, 0, 0, 0}, laValues(t, y))
}

func TestLinearHalfAndMixed(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	rng := rand.New(rand.NewSource(22))
	x, w := laRand(g, rng, 3, 21).AsType(tensor.Float16), laRand(g, rng, 5, 21).AsType(tensor.Float16)
	y := tensor.Linear(x, w)
	require.Equal(t, tensor.Float16, y.DType())
	want, scale := laLinearRef(t, x, w) // from the half-rounded inputs
	laCheck(t, "float16", laValues(t, y), want, scale, 1e-6, 1.0/2048)

	xf := laRand(g, rng, 2, 21)
	ym := tensor.Linear(xf, w)
	require.Equal(t, tensor.Float32, ym.DType(), "float32 with float16 promotes to float32")
	want, scale = laLinearRef(t, xf, w)
	laCheck(t, "mixed", laValues(t, ym), want, scale, 1e-6, 0)
}

// TestLinearRowsIndependentOfBatch: decode (one row) and prefill (many rows) give the
// same bits for the same row, so cached and uncached runs cannot drift apart here.
func TestLinearRowsIndependentOfBatch(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	rng := rand.New(rand.NewSource(23))
	x, w := laRand(g, rng, 9, 64), laRand(g, rng, 192, 64)
	all, err := tensor.Linear(x, w).Float32s()
	require.NoError(t, err)
	for r := 0; r < 9; r++ {
		one, err := tensor.Linear(tensor.SliceAxis(x, 0, r, r+1), w).Float32s()
		require.NoError(t, err)
		require.Equal(t, all[r*192:(r+1)*192], one, "row %d", r)
	}
}

func TestLinearShapeErrors(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	f := func(s ...int) tensor.Array { return tensor.Zeros(g, tensor.Float32, s...) }
	require.PanicsWithError(t, "tensor: linear: cannot multiply [2 3] by the transpose of [4 5]",
		func() { tensor.Linear(f(2, 3), f(4, 5)) })
	require.PanicsWithError(t, "tensor: linear: cannot multiply [2 3] by the transpose of [3]",
		func() { tensor.Linear(f(2, 3), f(3)) })
	xi := tensor.Zeros(g, tensor.Int32, 2, 3)
	require.PanicsWithError(t, "tensor: linear: want floating-point operands, got int32 and int32",
		func() { tensor.Linear(xi, xi) })
}

func TestMatmul(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	rng := rand.New(rand.NewSource(24))
	cases := []struct {
		name  string
		a, b  tensor.Array
		shape []int
	}{
		{"2-D", laRand(g, rng, 3, 5), laRand(g, rng, 5, 4), []int{3, 4}},
		{"prefill-sized", laRand(g, rng, 37, 64), laRand(g, rng, 64, 33), []int{37, 33}},
		{"equal batch", laRand(g, rng, 2, 3, 5), laRand(g, rng, 2, 5, 4), []int{2, 3, 4}},
		{"broadcast both", laRand(g, rng, 2, 1, 3, 5), laRand(g, rng, 4, 5, 6), []int{2, 4, 3, 6}},
		{"shared a", laRand(g, rng, 3, 5), laRand(g, rng, 2, 5, 4), []int{2, 3, 4}},
		{"shared b", laRand(g, rng, 2, 2, 3, 7), laRand(g, rng, 1, 7, 2), []int{2, 2, 3, 2}},
		{"b transposed view", laRand(g, rng, 3, 5), tensor.Transpose(laRand(g, rng, 4, 5)), []int{3, 4}},
		{"a sliced view", tensor.SliceAxis(laRand(g, rng, 3, 9), 1, 2, 7), laRand(g, rng, 5, 2), []int{3, 2}},
	}
	for _, c := range cases {
		y := tensor.Matmul(c.a, c.b)
		require.Equal(t, c.shape, y.Shape(), c.name)
		want, scale, shape := laMatmulRef(laValues(t, c.a), c.a.Shape(), laValues(t, c.b), c.b.Shape())
		require.Equal(t, c.shape, shape, c.name)
		laCheck(t, c.name, laValues(t, y), want, scale, 1e-6, 0)
	}
}

func TestMatmulVectors(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	rng := rand.New(rand.NewSource(25))
	v5, m54, m35 := laRand(g, rng, 5), laRand(g, rng, 5, 4), laRand(g, rng, 3, 5)
	// Promote the vectors to matrices for the reference, then compare the squeezed result.
	for _, c := range []struct {
		name       string
		a, b       tensor.Array
		shape      []int
		aRef, bRef []int
	}{
		{"row @ matrix", v5, m54, []int{4}, []int{1, 5}, []int{5, 4}},
		{"matrix @ column", m35, v5, []int{3}, []int{3, 5}, []int{5, 1}},
		{"dot", v5, v5, nil, []int{1, 5}, []int{5, 1}},
	} {
		y := tensor.Matmul(c.a, c.b)
		require.Equal(t, c.shape, y.Shape(), c.name)
		want, scale, _ := laMatmulRef(laValues(t, c.a), c.aRef, laValues(t, c.b), c.bRef)
		laCheck(t, c.name, laValues(t, y), want, scale, 1e-6, 0)
	}
}

func TestMatmulMatchesLinear(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	rng := rand.New(rand.NewSource(26))
	x, w := laRand(g, rng, 6, 30), laRand(g, rng, 10, 30)
	lin, err := tensor.Linear(x, w).Float32s()
	require.NoError(t, err)
	mm, err := tensor.Matmul(x, tensor.Transpose(w)).Float32s()
	require.NoError(t, err)
	require.Equal(t, lin, mm, "one kernel, one arithmetic")
}

func TestMatmulShapeErrors(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	f := func(s ...int) tensor.Array { return tensor.Zeros(g, tensor.Float32, s...) }
	require.PanicsWithError(t, "tensor: matmul: cannot multiply [3 5] by [4 2]",
		func() { tensor.Matmul(f(3, 5), f(4, 2)) })
	require.PanicsWithError(t, "tensor: matmul: shapes [[2] [3]] do not broadcast",
		func() { tensor.Matmul(f(2, 3, 5), f(3, 5, 4)) })
	require.PanicsWithError(t, "tensor: matmul: cannot multiply [] by [3 2]",
		func() { tensor.Matmul(tensor.Scalar(g, 1, tensor.Float32), f(3, 2)) })
}

// laExpert is expert e's matrix [O, K] of a stacked w [E, O, K], via ordinary ops.
func laExpert(w tensor.Array, e int) tensor.Array {
	return tensor.Squeeze(tensor.SliceAxis(w, 0, e, e+1), 0)
}

// TestGatherMMMatchesLinearLoop: every (row, slot) of GatherMM equals Linear of that row
// with the chosen expert's matrix, bit for bit (out-of-range experts are an error: see
// TestOutOfRangeIndexIsAnError).
func TestGatherMMMatchesLinearLoop(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	rng := rand.New(rand.NewSource(27))
	const T, k, E, O, K = 4, 2, 8, 64, 64
	x, w := laRand(g, rng, T, K), laRand(g, rng, E, O, K)
	ids := []int32{2, 5, 7, 0, -1, 3, -8, 6} // -1 wraps to 7, -8 to 0
	idx := tensor.FromInt32(g, ids, T, k)
	y := tensor.GatherMM(x, w, idx)
	require.Equal(t, []int{T, k, O}, y.Shape())
	got, err := y.Float32s()
	require.NoError(t, err)
	for r := 0; r < T; r++ {
		for j := 0; j < k; j++ {
			e := int(ids[r*k+j])
			row := got[(r*k+j)*O : (r*k+j+1)*O]
			if e < 0 {
				e += E
			}
			want, err := tensor.Linear(tensor.SliceAxis(x, 0, r, r+1), laExpert(w, e)).Float32s()
			require.NoError(t, err)
			require.Equal(t, want, row, "row %d slot %d expert %d", r, j, e)
		}
	}
}

func TestGatherMMShapes(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	rng := rand.New(rand.NewSource(28))
	// Leading dims, odd sizes, a transposed x and uint32 indices.
	x := tensor.Transpose(laRand(g, rng, 13, 3, 2), 2, 1, 0) // [2, 3, 13], not dense
	w := laRand(g, rng, 5, 7, 13)
	ids := []int32{4, 0, 1, 3, 3, 2, 0, 4, 1, 2, 2, 0, 1, 1, 4, 3, 0, 2}
	idx := tensor.FromInt32(g, ids, 2, 3, 3).AsType(tensor.UInt32)
	y := tensor.GatherMM(x, w, idx)
	require.Equal(t, []int{2, 3, 3, 7}, y.Shape())
	xv, wv := laValues(t, x), laValues(t, w)
	var want, scale []float64
	for r := 0; r < 6; r++ {
		for j := 0; j < 3; j++ {
			e := int(ids[r*3+j])
			for o := 0; o < 7; o++ {
				var s, sc float64
				for p := 0; p < 13; p++ {
					v := xv[r*13+p] * wv[(e*7+o)*13+p]
					s, sc = s+v, sc+math.Abs(v)
				}
				want, scale = append(want, s), append(scale, sc)
			}
		}
	}
	laCheck(t, "gather_mm leading dims", laValues(t, y), want, scale, 1e-6, 0)
}

func TestGatherMMShapeErrors(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	f := func(s ...int) tensor.Array { return tensor.Zeros(g, tensor.Float32, s...) }
	i := func(s ...int) tensor.Array { return tensor.Zeros(g, tensor.Int32, s...) }
	require.PanicsWithError(t, "tensor: gather_mm: x [2 4], w [8 3 5], idx [2 2]: want x [..., K], w [E, O, K], idx [..., k]",
		func() { tensor.GatherMM(f(2, 4), f(8, 3, 5), i(2, 2)) })
	require.PanicsWithError(t, "tensor: gather_mm: x [2 4] and idx [3 2] differ in leading dims",
		func() { tensor.GatherMM(f(2, 4), f(8, 3, 4), i(3, 2)) })
	require.PanicsWithError(t, "tensor: gather_mm: indices must be int32 or uint32, got float32",
		func() { tensor.GatherMM(f(2, 4), f(8, 3, 4), f(2, 2)) })
}

func BenchmarkLinearGraph(b *testing.B) {
	// Through the graph: op construction, scheduling, the worker hand-off and the wait,
	// on top of the kernel (compare BenchmarkLinear in package kernels).
	g := graph.NewCPU(graph.Options{})
	rng := rand.New(rand.NewSource(29))
	for _, s := range []struct{ m, n, k int }{{1, 192, 64}, {1, 64, 64}} {
		x, w := laRand(g, rng, s.m, s.k), laRand(g, rng, s.n, s.k)
		b.Run(fmt.Sprintf("%dx%d@(%dx%d)T", s.m, s.k, s.n, s.k), func(b *testing.B) {
			for b.Loop() {
				if err := tensor.Eval(tensor.Linear(x, w)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(2*s.m*s.n*s.k)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
		})
	}
}
