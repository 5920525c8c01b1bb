package kernels_test

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/kernels"
)

// The elementwise Go twins (binary, unary, where, copy/cast, concatenate, slice_update,
// arange) against naive float64 references, launched directly with kernels.NewArg
// buffers: random inputs, dense / transposed / sliced-with-offset / broadcast views,
// outputs poisoned before every run.

// ewView says how an input sits in its buffer.
type ewView int

const (
	ewDense      ewView = iota
	ewTransposed        // axes reversed: a view of a buffer holding the transpose
	ewSliced            // x[1::2, 1::2, ...] of a larger buffer: an offset and doubled strides
	ewStride0           // the last axis broadcast from size 1 (stride 0), as BroadcastTo views
)

// ewLayout is shape seen through view v.
func ewLayout(dt kernels.DType, shape []int, v ewView) kernels.Layout {
	nd := len(shape)
	switch v {
	case ewTransposed:
		rev := make([]int, nd)
		for i, d := range shape {
			rev[nd-1-i] = d
		}
		st := kernels.Contiguous(dt, rev...)
		l := kernels.Contiguous(dt, shape...)
		for i := range shape {
			l.Strides[i] = st.Strides[nd-1-i]
		}
		return l
	case ewSliced:
		big := make([]int, nd)
		for i, d := range shape {
			big[i] = 2*d + 1
		}
		l := kernels.Contiguous(dt, big...)
		for i, d := range shape {
			l.Offset += l.Strides[i]
			l.Shape[i] = d
			l.Strides[i] *= 2
		}
		if nd == 0 {
			l.Offset = 2 // a scalar inside a larger buffer
		}
		return l
	case ewStride0:
		l := kernels.Contiguous(dt, shape...)
		if nd > 0 {
			l = kernels.Contiguous(dt, append(append([]int(nil), shape[:nd-1]...), 1)...)
			l.Shape[nd-1], l.Strides[nd-1] = shape[nd-1], 0
		}
		return l
	}
	return kernels.Contiguous(dt, shape...)
}

// ewArg allocates layout l and fills every buffer element with gen (stored as a cast).
func ewArg(t *testing.T, l kernels.Layout, gen func() float64) kernels.Arg {
	t.Helper()
	a := kernels.NewArg(l) // the elements before the offset and between strides are random too
	n := len(a.Data) / l.DType.Size()
	for try := 0; try < 100; try++ { // small inputs drawn from sets with 0: draw again
		nonzero := false
		for i := 0; i < n; i++ {
			kernels.Store(l.DType, a.Data, i, gen())
			nonzero = nonzero || kernels.Load(l.DType, a.Data, i) != 0
		}
		if nonzero || n == 0 {
			return a
		}
	}
	require.Fail(t, "all-zero input")
	return a
}

// ewIndices lists the multi-indices of shape in row-major order.
func ewIndices(shape []int) [][]int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	out := make([][]int, 0, n)
	idx := make([]int, len(shape))
	for k := 0; k < n; k++ {
		out = append(out, append([]int(nil), idx...))
		for d := len(shape) - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
	}
	return out
}

// ewAt reads a (its own, unbroadcast layout) at output index idx by numpy rules.
func ewAt(a *kernels.Arg, idx []int) float64 {
	lead := len(idx) - a.NDim
	off := a.Offset
	for j := 0; j < a.NDim; j++ {
		if a.Shape[j] != 1 {
			off += idx[lead+j] * a.Strides[j]
		}
	}
	return kernels.Load(a.DType, a.Data, off)
}

// ewBroadcast is the numpy broadcast of two shapes (they must broadcast).
func ewBroadcast(a, b []int) []int {
	if len(a) < len(b) {
		a, b = b, a
	}
	out := append([]int(nil), a...)
	for j, d := range b {
		i := len(a) - len(b) + j
		if out[i] == 1 {
			out[i] = d
		}
	}
	return out
}

// ewRoundBits rounds v to nearest even with mant stored mantissa bits, minExp the
// smallest normal exponent and top the largest finite value (subnormals keep the
// smallest normal's spacing; past top+half an ulp it is infinity).
func ewRoundBits(v float64, mant, minExp int, top float64) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	e := max(math.Ilogb(v), minExp)
	ulp := math.Ldexp(1, e-mant)
	r := math.RoundToEven(v/ulp) * ulp
	if math.Abs(r) > top {
		return math.Copysign(math.Inf(1), v)
	}
	return r
}

// ewRound is what a cast of the exact value v to dt stores.
func ewRound(dt kernels.DType, v float64) float64 {
	switch dt {
	case kernels.Float32:
		return ewRoundBits(v, 23, -126, math.MaxFloat32)
	case kernels.Float16:
		return ewRoundBits(v, 10, -14, 65504)
	case kernels.BFloat16:
		return ewRoundBits(v, 7, -126, math.Ldexp(255, 120))
	case kernels.Int32:
		return math.Trunc(v)
	case kernels.Bool:
		return ewB(v != 0)
	}
	panic("ewRound: " + dt.String())
}

// ewULP is the spacing of dt's values at v.
func ewULP(dt kernels.DType, v float64) float64 {
	mant, minExp := 10, -14
	if dt == kernels.BFloat16 {
		mant, minExp = 7, -126
	}
	return math.Ldexp(1, max(math.Ilogb(v), minExp)-mant)
}

func ewB(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// ewWorst is the largest float32 relative error seen, logged by each test.
type ewWorst struct{ rel float64 }

// ewCheck compares output o element by element with want (exact float64 results):
// float32 to 1e-6 relative with a 1e-9 floor, the half types equal to want rounded to
// the dtype (within ulps units of the dtype), int32 exactly, bool as bytes 0 or 1.
// ulps < 0 asks for exactly want in every dtype (copies, casts, selections).
func ewCheck(t *testing.T, what string, o *kernels.Arg, want []float64, ulps float64, w *ewWorst) {
	t.Helper()
	require.Equal(t, len(want), o.Size(), what)
	for i, x := range want {
		got := kernels.Load(o.DType, o.Data, i)
		switch {
		case o.DType == kernels.Bool:
			require.Contains(t, []byte{0, 1}, o.Data[i], "%s [%d] unwritten", what, i)
			require.Equal(t, x, got, "%s [%d]", what, i)
		case ulps < 0:
			require.Equal(t, x, got, "%s [%d]", what, i)
		case o.DType == kernels.Float32:
			d := math.Abs(got - x)
			require.LessOrEqual(t, d, 1e-6*math.Abs(x)+1e-9, "%s [%d]: got %v want %v", what, i, got, x)
			if x != 0 {
				w.rel = math.Max(w.rel, d/math.Abs(x))
			}
		case o.DType == kernels.Float16 || o.DType == kernels.BFloat16:
			r := ewRound(o.DType, x)
			if ulps == 0 || math.IsInf(r, 0) {
				require.Equal(t, r, got, "%s [%d] (exact %v)", what, i, x)
			} else {
				require.LessOrEqual(t, math.Abs(got-r), ulps*ewULP(o.DType, r), "%s [%d]: got %v want %v", what, i, got, r)
			}
		default:
			require.Equal(t, ewRound(o.DType, x), got, "%s [%d]", what, i)
		}
	}
}

// ewRefBinary is the float64 reference of every binary op, written independently.
var ewRefBinary = map[string]func(a, b float64) float64{
	"add":           func(a, b float64) float64 { return a + b },
	"sub":           func(a, b float64) float64 { return a - b },
	"mul":           func(a, b float64) float64 { return a * b },
	"div":           func(a, b float64) float64 { return a / b },
	"maximum":       math.Max,
	"minimum":       math.Min,
	"equal":         func(a, b float64) float64 { return ewB(a == b) },
	"not_equal":     func(a, b float64) float64 { return ewB(a != b) },
	"less":          func(a, b float64) float64 { return ewB(a < b) },
	"less_equal":    func(a, b float64) float64 { return ewB(a <= b) },
	"greater":       func(a, b float64) float64 { return ewB(a > b) },
	"greater_equal": func(a, b float64) float64 { return ewB(a >= b) },
	"logical_and":   func(a, b float64) float64 { return ewB(a != 0 && b != 0) },
	"logical_or":    func(a, b float64) float64 { return ewB(a != 0 || b != 0) },
}

func ewSigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	e := math.Exp(x)
	return e / (1 + e)
}

// ewRefUnary is the float64 reference of every unary op.
var ewRefUnary = map[string]func(x float64) float64{
	"neg":     func(x float64) float64 { return -x },
	"exp":     math.Exp,
	"log":     math.Log,
	"sqrt":    math.Sqrt,
	"rsqrt":   func(x float64) float64 { return 1 / math.Sqrt(x) },
	"sigmoid": ewSigmoid,
	"silu":    func(x float64) float64 { return x * ewSigmoid(x) },
	"softplus": func(x float64) float64 { // max(x, 0) + log(1 + e^-|x|)
		return math.Max(x, 0) + math.Log1p(math.Exp(-math.Abs(x)))
	},
	"abs":    math.Abs,
	"square": func(x float64) float64 { return x * x },
	"sin":    math.Sin,
	"cos":    math.Cos,
	"tanh": func(x float64) float64 { // via expm1: accurate near 0 too
		e := math.Expm1(-2 * math.Abs(x))
		return math.Copysign(-e/(2+e), x)
	},
	"logical_not": func(x float64) float64 { return ewB(x == 0) },
}

// ewExactOps are the unary ops whose half results must match exactly (exact in float64,
// one rounding); every binary op is held to that too: +, -, * of two half values are
// exact in float32 and a quotient cannot land on a half tie, so the twins' rounding
// through float32 loses nothing.
var ewExactOps = map[string]bool{"neg": true, "abs": true, "square": true}

func ewUniform(rng *rand.Rand, lo, hi float64) func() float64 {
	return func() float64 { return lo + rng.Float64()*(hi-lo) }
}

func ewPick(rng *rand.Rand, vs ...float64) func() float64 {
	return func() float64 { return vs[rng.Intn(len(vs))] }
}

// ewBinaryGens draws operands for op in dt: small sets with ties and zeros for
// comparisons and logic, divisors away from zero, integers for int32.
func ewBinaryGens(rng *rand.Rand, op *kernels.BinaryOp, dt kernels.DType) (ga, gb func() float64) {
	switch {
	case dt == kernels.Bool:
		g := ewPick(rng, 0, 1)
		return g, g
	case op.Cmp:
		g := ewPick(rng, -2, -1, -0.5, 0, 0.5, 1, 2)
		if dt == kernels.Int32 {
			g = ewPick(rng, -2, -1, 0, 1, 2)
		}
		return g, g
	case dt == kernels.Int32 && op == kernels.OpDiv:
		return func() float64 { return float64(rng.Intn(41) - 20) },
			ewPick(rng, -9, -7, -4, -3, -2, -1, 1, 2, 3, 5, 8, 9) // truncation toward zero shows
	case dt == kernels.Int32:
		return func() float64 { return float64(rng.Intn(41) - 20) }, func() float64 { return float64(rng.Intn(41) - 20) }
	case op == kernels.OpDiv:
		return ewUniform(rng, -3, 3), func() float64 { return math.Copysign(0.5+2.5*rng.Float64(), rng.Float64()-0.5) }
	}
	return ewUniform(rng, -3, 3), ewUniform(rng, -3, 3)
}

type ewBinCase struct {
	a, b   []int
	va, vb ewView
}

var ewBinCases = []ewBinCase{
	{nil, nil, ewSliced, ewDense},                                 // rank 0
	{[]int{7}, []int{7}, ewSliced, ewDense},                       // rank 1, offset
	{[]int{1}, []int{7}, ewDense, ewSliced},                       // left operand broadcast
	{[]int{3, 5}, []int{3, 5}, ewDense, ewDense},                  // dense fast path
	{[]int{9, 13}, nil, ewDense, ewSliced},                        // scalar right operand fast path
	{[]int{3, 5}, []int{3, 5}, ewTransposed, ewDense},             // non-contiguous left
	{[]int{3, 5}, []int{3, 5}, ewDense, ewTransposed},             // non-contiguous right
	{[]int{3, 5}, []int{3, 5}, ewStride0, ewStride0},              // broadcast views
	{[]int{2, 3, 5}, []int{3, 1}, ewSliced, ewTransposed},         // right broadcast, lower rank
	{[]int{4, 1, 3}, []int{2, 1}, ewTransposed, ewSliced},         // both broadcast: [4,2,3]
	{[]int{2, 1, 3, 5}, []int{1, 4, 1, 1}, ewDense, ewTransposed}, // rank 4, both broadcast
	{[]int{3, 1, 5, 1}, []int{3, 4, 5, 2}, ewSliced, ewSliced},    // rank 4
	{[]int{1, 1}, []int{3, 1, 5}, ewTransposed, ewDense},          // rank grows on the left
}

// ewBroadcastArg returns a as the graph hands it to a Broadcasts kernel: seen with out's shape.
func ewBroadcastArg(a kernels.Arg, out *kernels.Layout) kernels.Arg {
	if !kernels.SameShape(&a.Layout, out) {
		a.Layout = kernels.BroadcastLayout(&a.Layout, out)
	}
	return a
}

func TestEWBinaryMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	var w ewWorst
	launches := 0
	for _, op := range kernels.BinaryOps {
		ref, ok := ewRefBinary[op.Name]
		require.True(t, ok, "no reference for binary op %s", op.Name)
		dts := []kernels.DType{kernels.Float32, kernels.Int32, kernels.Float16, kernels.BFloat16}
		if op.Cmp {
			dts = append(dts, kernels.Bool)
		}
		for _, dt := range dts {
			for ci, c := range ewBinCases {
				ga, gb := ewBinaryGens(rng, op, dt)
				a := ewArg(t, ewLayout(dt, c.a, c.va), ga)
				b := ewArg(t, ewLayout(dt, c.b, c.vb), gb)
				shape := ewBroadcast(c.a, c.b)
				odt := dt
				if op.Cmp {
					odt = kernels.Bool
				}
				ol := kernels.Contiguous(odt, shape...)
				want := make([]float64, 0, ol.Size())
				for _, idx := range ewIndices(shape) {
					v := ref(ewAt(&a, idx), ewAt(&b, idx))
					want = append(want, v)
				}
				inPlace := []bool{false}
				if !op.Cmp && c.va == ewDense && kernels.SameShape(&a.Layout, &ol) {
					inPlace = append(inPlace, true) // as after donation: out is a's buffer
				}
				for _, ip := range inPlace {
					l := kernels.Launch{Kernel: kernels.BinaryKernel(op), NArgs: 3}
					l.Args[0], l.Args[1] = ewBroadcastArg(a, &ol), ewBroadcastArg(b, &ol)
					if ip {
						l.Args[0].Data = append([]byte(nil), a.Data...)
						l.Args[2] = kernels.Arg{Data: l.Args[0].Data, Layout: ol}
					} else {
						l.Args[2] = kernels.NewArg(ol)
						kernels.Poison(&l.Args[2])
					}
					kernels.Run(&l)
					launches++
					ewCheck(t, fmt.Sprintf("%s %s case %d in-place=%v", op.Name, dt, ci, ip), l.Out(), want, 0, &w)
				}
			}
		}
	}
	t.Logf("%d binary launches, worst float32 relative error %.3g", launches, w.rel)
}

// ewUnaryRange is the input interval of op: positive for the logs and roots, wide for
// the saturating ops (both tails), moderate elsewhere.
func ewUnaryRange(op *kernels.UnaryOp) (lo, hi float64) {
	switch op {
	case kernels.OpLog, kernels.OpSqrt, kernels.OpRsqrt:
		return 0.01, 9
	case kernels.OpExp:
		return -10, 10
	case kernels.OpSigmoid, kernels.OpSilu, kernels.OpSoftplus, kernels.OpTanh:
		return -40, 40
	}
	return -4, 4
}

var ewUnaryShapes = []struct {
	shape []int
	v     ewView
}{
	{nil, ewDense}, {nil, ewSliced}, {[]int{33}, ewDense}, {[]int{7}, ewSliced},
	{[]int{3, 5}, ewTransposed}, {[]int{2, 3, 5}, ewSliced}, {[]int{2, 1, 3, 4}, ewTransposed},
	{[]int{3, 4, 1, 5}, ewDense}, {[]int{4, 6}, ewStride0},
}

func TestEWUnaryMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewSource(12))
	var w ewWorst
	launches := 0
	for _, op := range kernels.UnaryOps {
		ref, ok := ewRefUnary[op.Name]
		require.True(t, ok, "no reference for unary op %s", op.Name)
		dts := []kernels.DType{kernels.Float32, kernels.Float16, kernels.BFloat16}
		if op == kernels.OpNeg || op == kernels.OpAbs || op == kernels.OpSquare || op == kernels.OpNot {
			dts = append(dts, kernels.Int32) // the ops tensor keeps in int32
		}
		if op == kernels.OpNot {
			dts = append(dts, kernels.Bool)
		}
		ulps := 1.0 // the twins and the references use different float64 formulas
		if ewExactOps[op.Name] {
			ulps = 0
		}
		for _, dt := range dts {
			lo, hi := ewUnaryRange(op)
			gen := ewUniform(rng, lo, hi)
			switch {
			case op == kernels.OpNot:
				gen = ewPick(rng, -1.5, 0, 0, 2, 0.25)
			case dt == kernels.Int32:
				gen = func() float64 { return float64(rng.Intn(61) - 30) }
			}
			odt := dt
			if op == kernels.OpNot {
				odt = kernels.Bool
			}
			for ci, c := range ewUnaryShapes {
				a := ewArg(t, ewLayout(dt, c.shape, c.v), gen)
				ol := kernels.Contiguous(odt, c.shape...)
				var want []float64
				for _, idx := range ewIndices(c.shape) {
					want = append(want, ref(ewAt(&a, idx)))
				}
				l := kernels.Launch{Kernel: kernels.UnaryKernel(op), NArgs: 2}
				l.Args[0], l.Args[1] = a, kernels.NewArg(ol)
				kernels.Poison(&l.Args[1])
				kernels.Run(&l)
				launches++
				ewCheck(t, fmt.Sprintf("%s %s case %d", op.Name, dt, ci), l.Out(), want, ulps, &w)
			}
		}
	}
	t.Logf("%d unary launches, worst float32 relative error %.3g", launches, w.rel)
}

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
