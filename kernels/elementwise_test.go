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
