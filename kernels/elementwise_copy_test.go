package kernels_test

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/kernels"
)

var ewAllDTypes = []kernels.DType{kernels.Float32, kernels.Float16, kernels.BFloat16, kernels.Int32, kernels.Bool}

// ewValueGen draws values of dt: integers for int32, coin flips for bool.
func ewValueGen(rng *rand.Rand, dt kernels.DType) func() float64 {
	switch dt {
	case kernels.Int32:
		return func() float64 { return float64(rng.Intn(201) - 100) }
	case kernels.Bool:
		return ewPick(rng, 0, 1)
	}
	return ewUniform(rng, -5, 5)
}

func TestEWWhereMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewSource(13))
	cases := []struct {
		c, a, b    []int
		vc, va, vb ewView
	}{
		{nil, nil, nil, ewDense, ewSliced, ewDense},
		{[]int{3, 1, 5}, []int{4, 5}, []int{3, 4, 1}, ewDense, ewTransposed, ewSliced},
		{nil, []int{2, 3}, []int{2, 3}, ewSliced, ewDense, ewTransposed}, // scalar condition
		{[]int{2, 3}, nil, []int{3}, ewTransposed, ewDense, ewSliced},
		{[]int{2, 1, 3, 1}, []int{1, 4, 1, 5}, []int{2, 4, 3, 5}, ewSliced, ewDense, ewTransposed},
		{[]int{9, 11}, []int{9, 11}, []int{9, 11}, ewDense, ewDense, ewDense},
		{[]int{7, 33}, []int{7, 33}, nil, ewDense, ewDense, ewDense}, // a mask against a fill
		{[]int{7, 33}, nil, []int{7, 33}, ewDense, ewDense, ewDense},
		{[]int{7, 33}, []int{7, 33}, []int{1, 33}, ewDense, ewDense, ewDense},
	}
	for _, dt := range ewAllDTypes {
		for ci, c := range cases {
			cond := ewArg(t, ewLayout(kernels.Bool, c.c, c.vc), ewPick(rng, 0, 1))
			a := ewArg(t, ewLayout(dt, c.a, c.va), ewValueGen(rng, dt))
			b := ewArg(t, ewLayout(dt, c.b, c.vb), ewValueGen(rng, dt))
			shape := ewBroadcast(ewBroadcast(c.c, c.a), c.b)
			ol := kernels.Contiguous(dt, shape...)
			var want []float64
			for _, idx := range ewIndices(shape) {
				v := ewAt(&b, idx)
				if ewAt(&cond, idx) != 0 {
					v = ewAt(&a, idx)
				}
				want = append(want, v)
			}
			l := kernels.Launch{Kernel: kernels.KWhere, NArgs: 4}
			l.Args[0], l.Args[1], l.Args[2] = ewBroadcastArg(cond, &ol), ewBroadcastArg(a, &ol), ewBroadcastArg(b, &ol)
			l.Args[3] = kernels.NewArg(ol)
			kernels.Poison(&l.Args[3])
			kernels.Run(&l)
			ewCheck(t, fmt.Sprintf("where %s case %d", dt, ci), l.Out(), want, -1, nil)
		}
	}
}

// ewCastGen draws sources for a src -> dst cast: zeros, values exactly halfway between
// two dst values (ties to even), subnormal and overflowing magnitudes for the half
// types, fractions of both signs for the float -> int32 truncation.
func ewCastGen(rng *rand.Rand, src, dst kernels.DType) func() float64 {
	return func() float64 {
		r := rng.Float64()
		switch {
		case r < 0.15:
			return 0
		case src == kernels.Bool:
			return float64(rng.Intn(2))
		case src == kernels.Int32:
			return float64(rng.Intn(10001) - 5000) // above 2048 (256) odd values are half ties
		case dst == kernels.Int32 || dst == kernels.Bool:
			if r < 0.4 {
				return float64(rng.Intn(101)-50) + 0.5
			}
			return -50 + 100*rng.Float64()
		case dst == kernels.Float16 || dst == kernels.BFloat16:
			v := -300 + 600*rng.Float64()
			switch {
			case r < 0.5:
				u := ewULP(dst, v)
				return (math.Floor(v/u) + 0.5) * u
			case r < 0.6:
				return v * 0x1p-22 // float16 subnormals
			case r < 0.65 && dst == kernels.Float16:
				return v * 300 // past 65504: infinity
			}
			return v
		}
		return -300 + 600*rng.Float64()
	}
}

func TestEWCastExact(t *testing.T) {
	rng := rand.New(rand.NewSource(14))
	cases := []struct {
		shape []int
		v     ewView
	}{{[]int{7, 13}, ewTransposed}, {[]int{2, 3, 5}, ewSliced}, {nil, ewDense}, {[]int{17}, ewDense},
		{[]int{2, 1, 3, 4}, ewTransposed}, {[]int{4, 6}, ewStride0}}
	launches := 0
	for _, src := range ewAllDTypes {
		for _, dst := range ewAllDTypes {
			gen := ewCastGen(rng, src, dst)
			ties := 0
			for ci, c := range cases {
				a := ewArg(t, ewLayout(src, c.shape, c.v), gen)
				var want []float64
				for _, idx := range ewIndices(c.shape) {
					v := ewAt(&a, idx)
					want = append(want, ewRound(dst, v))
					if r := want[len(want)-1]; (dst == kernels.Float16 || dst == kernels.BFloat16) &&
						!math.IsInf(r, 0) && math.Abs(v-r) == ewULP(dst, v)/2 {
						ties++
					}
				}
				l := kernels.Launch{Kernel: kernels.KCopy, NArgs: 2}
				l.Args[0], l.Args[1] = a, kernels.NewArg(kernels.Contiguous(dst, c.shape...))
				kernels.Poison(&l.Args[1])
				kernels.Run(&l)
				launches++
				ewCheck(t, fmt.Sprintf("cast %s->%s case %d", src, dst, ci), l.Out(), want, -1, nil)
			}
			if (src == kernels.Float32 || src == kernels.Int32) && (dst == kernels.Float16 || dst == kernels.BFloat16) {
				require.Greater(t, ties, 10, "%s->%s: too few ties to test rounding to even", src, dst)
			}
		}
	}
	t.Logf("%d cast launches", launches)
}

// ewShift is idx with axis ax moved back by by.
func ewShift(idx []int, ax, by int) []int {
	r := append([]int(nil), idx...)
	r[ax] -= by
	return r
}

func TestEWConcatenateEachAxis(t *testing.T) {
	rng := rand.New(rand.NewSource(15))
	sizes := []int{2, 1, 3}
	views := []ewView{ewTransposed, ewDense, ewSliced}
	for _, dt := range []kernels.DType{kernels.Float32, kernels.Float16, kernels.Int32} {
		for ax := 0; ax < 3; ax++ {
			l := kernels.Launch{Kernel: kernels.KConcatenate, Params: &kernels.ConcatParams{Axis: ax}, NArgs: 4}
			shape := []int{3, 4, 5}
			shape[ax] = 0
			var starts []int
			for i, n := range sizes {
				s := []int{3, 4, 5}
				s[ax] = n
				l.Args[i] = ewArg(t, ewLayout(dt, s, views[i]), ewValueGen(rng, dt))
				starts = append(starts, shape[ax])
				shape[ax] += n
			}
			var want []float64
			for _, idx := range ewIndices(shape) {
				k := len(sizes) - 1
				for k > 0 && idx[ax] < starts[k] {
					k--
				}
				want = append(want, ewAt(&l.Args[k], ewShift(idx, ax, starts[k])))
			}
			l.Args[3] = kernels.NewArg(kernels.Contiguous(dt, shape...))
			kernels.Poison(&l.Args[3])
			kernels.Run(&l)
			ewCheck(t, fmt.Sprintf("concatenate %s axis %d", dt, ax), l.Out(), want, -1, nil)
		}
	}
}

func TestEWSliceUpdate(t *testing.T) {
	rng := rand.New(rand.NewSource(16))
	cases := []struct {
		base, upd, start []int
		vb, vu           ewView
	}{
		{[]int{4, 5, 6}, []int{2, 3, 4}, []int{1, 2, 1}, ewSliced, ewTransposed},
		{[]int{9}, []int{3}, []int{5}, ewDense, ewSliced},
		{[]int{5, 7}, []int{5, 1}, []int{0, 6}, ewTransposed, ewDense},
		{[]int{2, 3, 2, 3}, []int{1, 3, 1, 2}, []int{1, 0, 1, 1}, ewSliced, ewSliced},
		{nil, nil, nil, ewDense, ewSliced}, // rank 0: the whole array is replaced
	}
	for _, dt := range []kernels.DType{kernels.Float32, kernels.Int32, kernels.BFloat16} {
		for ci, c := range cases {
			for _, inPlace := range []bool{false, true} {
				vb := c.vb
				if inPlace {
					vb = ewDense // a donated base is dense at offset 0
				}
				base := ewArg(t, ewLayout(dt, c.base, vb), ewValueGen(rng, dt))
				upd := ewArg(t, ewLayout(dt, c.upd, c.vu), ewValueGen(rng, dt))
				ol := kernels.Contiguous(dt, c.base...)
				p := &kernels.SliceUpdateParams{}
				for i, s := range c.start {
					p.Offset += s * ol.Strides[i]
					p.Strides[i] = ol.Strides[i]
				}
				var want []float64
				for _, idx := range ewIndices(c.base) {
					in := true
					rel := make([]int, len(idx))
					for i := range idx {
						rel[i] = idx[i] - c.start[i]
						in = in && rel[i] >= 0 && rel[i] < c.upd[i]
					}
					if in {
						want = append(want, ewAt(&upd, rel))
					} else {
						want = append(want, ewAt(&base, idx))
					}
				}
				before := append([]byte(nil), base.Data...)
				l := kernels.Launch{Kernel: kernels.KSliceUpdate, Params: p, NArgs: 3}
				l.Args[0], l.Args[1] = base, upd
				if inPlace {
					l.Args[2] = kernels.Arg{Data: base.Data, Layout: ol}
				} else {
					l.Args[2] = kernels.NewArg(ol)
					kernels.Poison(&l.Args[2])
				}
				kernels.Run(&l)
				what := fmt.Sprintf("slice_update %s case %d in-place=%v", dt, ci, inPlace)
				ewCheck(t, what, l.Out(), want, -1, nil)
				if !inPlace {
					require.Equal(t, before, base.Data, "%s: base modified", what)
				}
			}
		}
	}
}

func TestEWArange(t *testing.T) {
	cases := []struct {
		start, step float64
		n           int
		dt          kernels.DType
	}{
		{-3, 0.5, 37, kernels.Float32}, {0.1, 0.7, 11, kernels.Float32}, {1000, -0.3, 19, kernels.Float32},
		{0, 1, 0, kernels.Float32}, {2, 3, 20, kernels.Int32}, {10, -4, 7, kernels.Int32}, {-5, 1, 1, kernels.Int32},
	}
	var w ewWorst
	for _, c := range cases {
		l := kernels.Launch{Kernel: kernels.KArange, Params: &kernels.ArangeParams{Start: c.start, Step: c.step}, NArgs: 1}
		l.Args[0] = kernels.NewArg(kernels.Contiguous(c.dt, c.n))
		kernels.Poison(&l.Args[0])
		kernels.Run(&l)
		want := make([]float64, c.n)
		for i := range want {
			want[i] = c.start + float64(i)*c.step
		}
		ewCheck(t, fmt.Sprintf("arange %v", c), l.Out(), want, 0, &w)
	}
	t.Logf("worst float32 relative error %.3g", w.rel)
}

// TestEWEmptyArrays runs the elementwise twins on arrays with a zero dimension, dense
// and non-contiguous: nothing to write, nothing may be touched.
func TestEWEmptyArrays(t *testing.T) {
	rng := rand.New(rand.NewSource(17))
	for _, shape := range [][]int{{0}, {0, 5}, {5, 0}, {3, 0, 2}} {
		for _, v := range []ewView{ewDense, ewTransposed, ewSliced} {
			what := fmt.Sprintf("%v view %d", shape, v)
			a := ewArg(t, ewLayout(kernels.Float32, shape, v), ewUniform(rng, 1, 2))
			b := ewArg(t, ewLayout(kernels.Float32, shape, ewTransposed), ewUniform(rng, 1, 2))
			ol := kernels.Contiguous(kernels.Float32, shape...)
			for _, k := range []*kernels.Kernel{kernels.BinaryKernel(kernels.OpAdd), kernels.UnaryKernel(kernels.OpExp), kernels.KCopy} {
				l := kernels.Launch{Kernel: k, NArgs: 2}
				l.Args[0] = a
				if k == kernels.BinaryKernel(kernels.OpAdd) {
					l.Args[1] = b
					l.NArgs = 3
				}
				l.Args[l.NArgs-1] = kernels.NewArg(ol)
				require.NotPanics(t, func() { kernels.Run(&l) }, "%s %s", k.Name, what)
			}
		}
	}
	// An empty transposed piece of a concatenation must not write into its neighbours.
	e := ewArg(t, ewLayout(kernels.Float32, []int{3, 0, 5}, ewTransposed), ewUniform(rng, 1, 2))
	f := ewArg(t, ewLayout(kernels.Float32, []int{3, 4, 5}, ewSliced), ewUniform(rng, 1, 2))
	l := kernels.Launch{Kernel: kernels.KConcatenate, Params: &kernels.ConcatParams{Axis: 1}, NArgs: 3}
	l.Args[0], l.Args[1] = e, f
	l.Args[2] = kernels.NewArg(kernels.Contiguous(kernels.Float32, 3, 4, 5))
	kernels.Poison(&l.Args[2])
	var want []float64
	for _, idx := range ewIndices([]int{3, 4, 5}) {
		want = append(want, ewAt(&f, idx))
	}
	require.NotPanics(t, func() { kernels.Run(&l) })
	ewCheck(t, "concatenate with an empty piece", l.Out(), want, -1, nil)
}

// TestEWKernelFlags pins the flags the graph relies on: which kernels may write into
// their first input's buffer, which receive broadcast views.
func TestEWKernelFlags(t *testing.T) {
	arith := map[string]bool{"add": true, "sub": true, "mul": true, "div": true, "maximum": true, "minimum": true}
	for _, op := range kernels.BinaryOps {
		k := kernels.BinaryKernel(op)
		require.Equal(t, "binary_"+op.Name, k.Name)
		require.Equal(t, arith[op.Name], k.Donates, k.Name)
		require.Equal(t, !arith[op.Name], op.Cmp, k.Name)
		require.True(t, k.Broadcasts, k.Name)
	}
	for _, op := range kernels.UnaryOps {
		k := kernels.UnaryKernel(op)
		require.Equal(t, "unary_"+op.Name, k.Name)
		// Every unary kernel may write in place; logical_not's input is bool (the tensor op
		// casts first), and the graph donates only between equal item sizes anyway.
		require.True(t, k.Donates, k.Name)
		require.False(t, k.Broadcasts, k.Name)
	}
	for _, c := range []struct {
		k                   *kernels.Kernel
		donates, broadcasts bool
	}{{kernels.KWhere, false, true}, {kernels.KCopy, false, false}, {kernels.KConcatenate, false, false},
		{kernels.KSliceUpdate, true, false}, {kernels.KArange, false, false}} {
		require.Equal(t, c.donates, c.k.Donates, c.k.Name)
		require.Equal(t, c.broadcasts, c.k.Broadcasts, c.k.Name)
	}
}
