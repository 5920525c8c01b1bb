package tensor_test

import (
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/kernels"
	"github.com/ingotml/ingot/tensor"
)

func TestEWGraphWhere(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	rng := rand.New(rand.NewSource(23))
	cases := []struct {
		c, a, b    []int
		vc, va, vb int
		cdt        tensor.DType // cast to bool: x != 0
		adt, bdt   tensor.DType
	}{
		{[]int{3, 1, 5}, []int{4, 5}, []int{3, 4, 1}, ewDense, ewTransposed, ewSliced, tensor.Bool, tensor.Float32, tensor.Float32},
		{nil, []int{2, 3}, []int{2, 3}, ewSliced, ewDense, ewTransposed, tensor.Bool, tensor.Int32, tensor.Int32},
		{[]int{2, 3}, nil, []int{3}, ewTransposed, ewDense, ewSliced, tensor.Float32, tensor.Float16, tensor.Float16},
		{[]int{2, 1, 3, 1}, []int{1, 4, 1, 5}, []int{2, 4, 3, 5}, ewSliced, ewDense, ewTransposed, tensor.Int32, tensor.BFloat16, tensor.Int32},
		{[]int{5, 1}, []int{5, 3}, []int{1, 3}, ewSliced, ewSliced, ewDense, tensor.Bool, tensor.Float16, tensor.BFloat16},
		{[]int{4}, []int{4}, []int{4}, ewDense, ewDense, ewDense, tensor.Bool, tensor.Bool, tensor.Bool},
	}
	wantDT := []tensor.DType{tensor.Float32, tensor.Int32, tensor.Float16, tensor.BFloat16, tensor.Float32, tensor.Bool}
	for ci, c := range cases {
		cond := ewInput(t, g, c.cdt, c.c, c.vc, ewPick(rng, 0, 1, 0, -2))
		a := ewInput(t, g, c.adt, c.a, c.va, ewUniform(rng, -50, 50))
		b := ewInput(t, g, c.bdt, c.b, c.vb, ewUniform(rng, -50, 50))
		r := tensor.Where(cond.a, a.a, b.a)
		require.Equal(t, wantDT[ci], r.DType(), "case %d", ci)
		shape := ewBroadcast(c.c, c.a, c.b)
		var want []float64
		for _, idx := range ewIndices(shape) {
			v := b.at(idx)
			if cond.at(idx) != 0 {
				v = a.at(idx)
			}
			want = append(want, ewRound(r.DType(), v))
		}
		require.Equal(t, want, ewGet(t, r), "where case %d", ci)
	}
}

var ewDTypes = []tensor.DType{tensor.Float32, tensor.Float16, tensor.BFloat16, tensor.Int32, tensor.Bool}

func TestEWGraphAsType(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	rng := rand.New(rand.NewSource(24))
	for _, src := range ewDTypes {
		for _, dst := range ewDTypes {
			for ci, c := range []struct {
				shape []int
				view  int
			}{{[]int{7, 13}, ewTransposed}, {[]int{2, 3, 5}, ewSliced}, {nil, ewSliced}, {[]int{17}, ewDense}} {
				gen := func() float64 { // zeros, fractions of both signs, half ties above 2048
					switch r := rng.Float64(); {
					case r < 0.15:
						return 0
					case r < 0.4:
						return float64(rng.Intn(8001)-4000) + 0.5*float64(rng.Intn(2))
					case r < 0.5:
						return float64(rng.Intn(8001) - 4000)
					}
					return -300 + 600*rng.Float64()
				}
				in := ewInput(t, g, src, c.shape, c.view, gen)
				r := in.a.AsType(dst)
				require.Equal(t, dst, r.DType())
				if src == dst {
					require.Same(t, in.a.Handle(), r.Handle(), "a same-dtype cast is the array itself")
				}
				var want []float64
				for _, idx := range ewIndices(c.shape) {
					want = append(want, ewRound(dst, in.at(idx)))
				}
				require.Equal(t, want, ewGet(t, r), "%s -> %s case %d", src, dst, ci)
			}
		}
	}
}

func TestEWGraphConcatenate(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	rng := rand.New(rand.NewSource(25))
	join := func(what string, ax int, ins []ewIn, r tensor.Array) {
		t.Helper()
		shape := append([]int(nil), ins[0].shape...)
		shape[ax] = 0
		for _, in := range ins {
			shape[ax] += in.shape[ax]
		}
		require.Equal(t, shape, r.Shape(), what)
		var want []float64
		for _, idx := range ewIndices(shape) {
			j := append([]int(nil), idx...)
			k := 0
			for j[ax] >= ins[k].shape[ax] {
				j[ax] -= ins[k].shape[ax]
				k++
			}
			want = append(want, ewRound(r.DType(), ins[k].at(j)))
		}
		require.Equal(t, want, ewGet(t, r), what)
	}
	views := []int{ewTransposed, ewDense, ewSliced}
	for _, ax := range []int{0, 1, 2, -1} {
		for _, dts := range [][4]tensor.DType{ // three inputs, then the promoted dtype
			{tensor.Float32, tensor.Float32, tensor.Float32, tensor.Float32},
			{tensor.Int32, tensor.Int32, tensor.Int32, tensor.Int32},
			{tensor.Float16, tensor.Int32, tensor.Float16, tensor.Float16},
			{tensor.BFloat16, tensor.Float32, tensor.Int32, tensor.Float32},
			{tensor.Int32, tensor.Bool, tensor.BFloat16, tensor.BFloat16},
		} {
			var ins []ewIn
			var as []tensor.Array
			for i, n := range []int{2, 1, 3} {
				s := []int{3, 4, 5}
				s[(ax+3)%3] = n
				in := ewInput(t, g, dts[i], s, views[i], ewUniform(rng, -100, 100))
				ins, as = append(ins, in), append(as, in.a)
			}
			r := tensor.Concatenate(ax, as...)
			require.Equal(t, dts[3], r.DType())
			join(fmt.Sprintf("axis %d %v", ax, dts), (ax+3)%3, ins, r)
		}
	}
	// More inputs than one launch binds: joined in rounds.
	var ins []ewIn
	var as []tensor.Array
	for i := 0; i < 9; i++ {
		in := ewInput(t, g, tensor.Float32, []int{2, 1 + i%3, 3}, views[i%3], ewUniform(rng, -1, 1))
		ins, as = append(ins, in), append(as, in.a)
	}
	join("nine inputs", 1, ins, tensor.Concatenate(1, as...))
}

func TestEWGraphSliceUpdate(t *testing.T) {
	rng := rand.New(rand.NewSource(26))
	cases := []struct {
		base, upd, start []int
		udt              tensor.DType // cast to the base's float32
		vu               int
	}{
		{[]int{4, 5, 6}, []int{2, 3, 4}, []int{1, 2, 1}, tensor.Float32, ewTransposed},
		{[]int{9}, []int{3}, []int{5}, tensor.Int32, ewSliced},
		{[]int{5, 7}, []int{5, 1}, []int{0, 6}, tensor.BFloat16, ewDense},
		{nil, nil, nil, tensor.Float32, ewSliced},
	}
	for ci, c := range cases {
		for _, vb := range []int{ewDense, ewTransposed, ewSliced} {
			for _, held := range []bool{false, true} {
				what := fmt.Sprintf("case %d base view %d held=%v", ci, vb, held)
				g := graph.NewCPU(graph.Options{})
				base := ewInput(t, g, tensor.Float32, c.base, vb, ewUniform(rng, -9, 9))
				upd := ewInput(t, g, c.udt, c.upd, c.vu, ewUniform(rng, 10, 20))
				var dense, out tensor.Array
				tensor.WithScope(g, func() {
					dense = tensor.Copy(base.a) // an intermediate with its own buffer
					if held {
						dense = tensor.Keep(dense)
					}
					out = tensor.Keep(tensor.SliceUpdate(dense, upd.a, c.start))
				})
				before := g.Allocator().ActiveBufferCount()
				require.NoError(t, tensor.Eval(out))
				grew := g.Allocator().ActiveBufferCount() - before
				if c.udt != tensor.Float32 {
					grew-- // the update's cast has a buffer of its own
				}
				var want []float64
				for _, idx := range ewIndices(c.base) {
					rel := make([]int, len(idx))
					in := true
					for i := range idx {
						rel[i] = idx[i] - c.start[i]
						in = in && rel[i] >= 0 && rel[i] < c.upd[i]
					}
					if in {
						want = append(want, upd.at(rel))
					} else {
						want = append(want, base.at(idx))
					}
				}
				require.Equal(t, want, ewGet(t, out), what)
				require.Equal(t, base.vals, ewGet(t, base.a), "%s: the program's base changed", what)
				if held {
					require.Equal(t, 2, grew, "%s: a held base keeps its buffer", what)
					require.Equal(t, base.vals, ewGet(t, dense), "%s: held base overwritten", what)
				} else {
					require.Equal(t, 1, grew, "%s: the unreferenced base's buffer is donated", what)
				}
			}
		}
	}
}

func TestEWGraphArange(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	for _, c := range []struct {
		start, stop, step float64
		dt                tensor.DType
	}{
		{0, 10, 1, tensor.Int32}, {10, -3, -4, tensor.Int32}, {2, 9, 3, tensor.Int32}, {5, 2, 1, tensor.Int32},
		{-3, 3.01, 0.5, tensor.Float32}, {0.1, 2, 0.3, tensor.Float32}, {1000, 990, -0.7, tensor.Float32},
		{5, 5, 1, tensor.Float32},
	} {
		var want []float64
		for i := 0; ; i++ {
			v := c.start + float64(i)*c.step
			if (c.step > 0 && v >= c.stop) || (c.step < 0 && v <= c.stop) {
				break
			}
			want = append(want, v)
		}
		r := tensor.Arange(g, c.start, c.stop, c.step, c.dt)
		require.Equal(t, c.dt, r.DType())
		require.Equal(t, []int{len(want)}, r.Shape(), "%v", c)
		ewCheck(t, fmt.Sprintf("arange %v", c), r, want, 0)
	}
	require.PanicsWithError(t, "tensor: arange: step 0", func() { tensor.Arange(g, 0, 1, 0, tensor.Int32) })
}

// TestEWPromotion pins the dtype rules of mixed operands (floats over integers, float32
// over the half types, float16 with bfloat16 -> float32, int32 over uint32, all over
// bool) for binary ops, where and concatenate, and checks the mixed sums' values.
func TestEWPromotion(t *testing.T) {
	const (
		F32, F16, BF, I32, U32, B = tensor.Float32, tensor.Float16, tensor.BFloat16, tensor.Int32, tensor.UInt32, tensor.Bool
	)
	order := []tensor.DType{F32, F16, BF, I32, U32, B}
	want := [6][6]tensor.DType{
		{F32, F32, F32, F32, F32, F32}, // float32
		{F32, F16, F32, F16, F16, F16}, // float16
		{F32, F32, BF, BF, BF, BF},     // bfloat16
		{F32, F16, BF, I32, I32, I32},  // int32
		{F32, F16, BF, I32, U32, U32},  // uint32
		{F32, F16, BF, I32, U32, B},    // bool
	}
	g := graph.NewCPU(graph.Options{})
	xv, yv := []float64{0, 1, 2, 3, 0.5}, []float64{1, 0, 2, 1, 2.25}
	c := tensor.FromBool(g, []bool{true, false, true, false, true}, 5)
	for i, a := range order {
		for j, b := range order {
			dt := want[i][j]
			x, y := tensor.FromValues(g, a, xv, 5), tensor.FromValues(g, b, yv, 5)
			what := fmt.Sprintf("%s with %s", a, b)
			s := tensor.Add(x, y)
			require.Equal(t, dt, s.DType(), what)
			require.Equal(t, dt, tensor.Where(c, x, y).DType(), what)
			require.Equal(t, dt, tensor.Concatenate(0, x, y).DType(), what)
			require.Equal(t, B, tensor.Less(x, y).DType(), what)
			var sum []float64
			for k := range xv {
				sum = append(sum, ewRound(dt, ewRound(dt, ewRound(a, xv[k]))+ewRound(dt, ewRound(b, yv[k]))))
			}
			require.Equal(t, sum, ewGet(t, s), what)
		}
	}
}

// TestEWDonation: an intermediate read only by one elementwise op gives that op its
// buffer when the kernel Donates (one new buffer for the pair, counted by
// ActiveBufferCount), never when the intermediate is still referenced; kernels that do
// not donate always take a new buffer. The donated result equals the undonated one.
func TestEWDonation(t *testing.T) {
	type build func(m, y, c, u tensor.Array) tensor.Array
	type kase struct {
		name    string
		donates bool
		f       build
	}
	var cases []kase
	for _, op := range kernels.BinaryOps {
		f := ewBinary[op.Name].f
		cases = append(cases, kase{op.Name, !op.Cmp, func(m, y, _, _ tensor.Array) tensor.Array { return f(m, y) }})
	}
	for _, op := range kernels.UnaryOps {
		f := ewUnary[op.Name].f
		cases = append(cases, kase{op.Name, op != kernels.OpNot, func(m, _, _, _ tensor.Array) tensor.Array { return f(m) }})
	}
	cases = append(cases,
		kase{"slice_update", true, func(m, _, _, u tensor.Array) tensor.Array { return tensor.SliceUpdate(m, u, []int{1, 2}) }},
		kase{"where", false, func(m, y, c, _ tensor.Array) tensor.Array { return tensor.Where(c, m, y) }},
		kase{"astype", false, func(m, _, _, _ tensor.Array) tensor.Array { return m.AsType(tensor.Int32) }},
		kase{"copy", false, func(m, _, _, _ tensor.Array) tensor.Array { return tensor.Copy(m) }},
		kase{"concatenate", false, func(m, y, _, _ tensor.Array) tensor.Array { return tensor.Concatenate(0, m, y) }},
		kase{"broadcast add", false, func(m, y, _, _ tensor.Array) tensor.Array { // m is [1,7]: its shape is not the output's
			return tensor.Add(tensor.SliceAxis(m, 0, 0, 1), y)
		}},
	)
	rng := rand.New(rand.NewSource(27))
	rnd := func(n int, lo, hi float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(lo + rng.Float64()*(hi-lo))
		}
		return v
	}
	xv, yv, uv := rnd(35, -2, 2), rnd(35, 0.5, 3), rnd(6, -1, 1)
	cv := make([]bool, 35)
	for i := range cv {
		cv[i] = rng.Intn(2) == 1
	}
	for _, c := range cases {
		var results [2][]float64
		for k, held := range []bool{false, true} {
			what := fmt.Sprintf("%s held=%v", c.name, held)
			g := graph.NewCPU(graph.Options{})
			x, y := tensor.FromFloat32(g, xv, 5, 7), tensor.FromFloat32(g, yv, 5, 7)
			cond, u := tensor.FromBool(g, cv, 5, 7), tensor.FromFloat32(g, uv, 2, 3)
			var m, out tensor.Array
			tensor.WithScope(g, func() {
				m = tensor.Exp(x) // an intermediate with its own buffer
				if held {
					m = tensor.Keep(m)
				}
				out = tensor.Keep(c.f(m, y, cond, u))
			})
			before := g.Allocator().ActiveBufferCount()
			require.NoError(t, tensor.Eval(out), what)
			want := 2
			if c.donates && !held {
				want = 1
			}
			require.Equal(t, want, g.Allocator().ActiveBufferCount()-before, what)
			// The inputs must outlive the count: a collection during Eval would
			// otherwise release them and take their buffers off the count.
			runtime.KeepAlive(x)
			runtime.KeepAlive(y)
			runtime.KeepAlive(cond)
			runtime.KeepAlive(u)
			results[k] = ewGet(t, out)
			if held {
				mv := ewGet(t, m)
				for i, v := range xv {
					require.InDelta(t, math.Exp(float64(v)), mv[i], 1e-6*math.Exp(float64(v)), "%s: held input overwritten", what)
				}
			}
		}
		require.Equal(t, results[1], results[0], "%s: donated and undonated results differ", c.name)
	}

	// A program-held array is never donated: it stays readable and unchanged.
	g := graph.NewCPU(graph.Options{})
	x := tensor.FromFloat32(g, xv, 5, 7)
	before := g.Allocator().ActiveBufferCount()
	n := tensor.Neg(x)
	require.NoError(t, tensor.Eval(n))
	require.Equal(t, 1, g.Allocator().ActiveBufferCount()-before)
	got, err := x.Float32s()
	require.NoError(t, err)
	require.Equal(t, xv, got)
	nv, err := n.Float32s()
	require.NoError(t, err)
	for i := range xv {
		require.Equal(t, -xv[i], nv[i])
	}
}

// TestEWGraphEmpty: ops on arrays with a zero dimension, non-contiguous ones included,
// evaluate to empty results and leave their neighbours in a concatenation alone.
func TestEWGraphEmpty(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	v := make([]float32, 12)
	for i := range v {
		v[i] = float32(i) + 1
	}
	xt := tensor.Transpose(tensor.FromFloat32(g, v, 3, 4)) // [4,3], strides [1,4]
	for _, e := range []tensor.Array{
		tensor.Slice(xt, []int{1}, []int{1}),                             // [0,3]: the zero dim is not the row
		tensor.Slice(xt, []int{0, 1}, []int{4, 1}),                       // [4,0]
		tensor.Slice(tensor.ExpandDims(xt, 1), []int{0, 1}, []int{4, 1}), // [4,0,3]
	} {
		require.Zero(t, e.Size())
		for _, r := range []tensor.Array{tensor.Add(e, tensor.Exp(e)), e.AsType(tensor.Int32),
			tensor.Where(tensor.Greater(e, e), e, e)} {
			require.NoError(t, tensor.Eval(r), "%v", e.Shape())
			require.Equal(t, e.Shape(), r.Shape())
			require.Empty(t, ewGet(t, r))
		}
	}
	e := tensor.Slice(xt, []int{1}, []int{1})
	r := tensor.Concatenate(0, e, tensor.SliceAxis(xt, 0, 0, 2), e)
	require.Equal(t, []int{2, 3}, r.Shape())
	require.Equal(t, []float64{1, 5, 9, 2, 6, 10}, ewGet(t, r)) // xt[:2]
}
