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

// The elementwise tensor ops through the real graph (op -> Eval -> Float32s / Int32s /
// Bools) against float64 references: every binary and unary op, where, casts,
// concatenate, slice_update and arange, on dense, transposed, sliced (offset, step 2)
// and broadcast inputs; the dtype promotion table; buffer donation.

// ewRoundBits rounds v to nearest even with mant mantissa bits, minExp the smallest
// normal exponent and top the largest finite value.
func ewRoundBits(v float64, mant, minExp int, top float64) float64 {
	if v == 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return v
	}
	ulp := math.Ldexp(1, max2(math.Ilogb(v), minExp)-mant)
	r := math.RoundToEven(v/ulp) * ulp
	if math.Abs(r) > top {
		return math.Copysign(math.Inf(1), v)
	}
	return r
}

func max2(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// ewRound is what a cast of the exact value v to dt holds.
func ewRound(dt tensor.DType, v float64) float64 {
	switch dt {
	case tensor.Float32:
		return ewRoundBits(v, 23, -126, math.MaxFloat32)
	case tensor.Float16:
		return ewRoundBits(v, 10, -14, 65504)
	case tensor.BFloat16:
		return ewRoundBits(v, 7, -126, math.Ldexp(255, 120))
	case tensor.Int32, tensor.UInt32:
		return math.Trunc(v)
	}
	return ewB(v != 0)
}

// ewULP is the spacing of the half type dt at v.
func ewULP(dt tensor.DType, v float64) float64 {
	if dt == tensor.BFloat16 {
		return math.Ldexp(1, max2(math.Ilogb(v), -126)-7)
	}
	return math.Ldexp(1, max2(math.Ilogb(v), -14)-10)
}

func ewB(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func ewCount(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// ewIndices lists the multi-indices of shape in row-major order.
func ewIndices(shape []int) [][]int {
	n := ewCount(shape)
	out := make([][]int, 0, n)
	idx := make([]int, len(shape))
	for k := 0; k < n; k++ {
		out = append(out, append([]int(nil), idx...))
		for d := len(shape) - 1; d >= 0; d-- {
			if idx[d]++; idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
	}
	return out
}

// ewFlat is the row-major position of idx in shape.
func ewFlat(idx, shape []int) int {
	f := 0
	for i, d := range shape {
		f = f*d + idx[i]
	}
	return f
}

// ewIn is an input array with its logical values (row-major over shape).
type ewIn struct {
	a     tensor.Array
	vals  []float64
	shape []int
}

// at reads the input at output index idx by numpy broadcasting.
func (in ewIn) at(idx []int) float64 {
	lead := len(idx) - len(in.shape)
	j := make([]int, len(in.shape))
	for i, d := range in.shape {
		if d != 1 {
			j[i] = idx[lead+i]
		}
	}
	return in.vals[ewFlat(j, in.shape)]
}

const (
	ewDense = iota
	ewTransposed
	ewSliced
)

// ewInput builds a random array of dt and shape: dense, a Transpose of a buffer
// holding the transpose, or x[1::2, ...] of a larger buffer (rank 0: an element at
// offset 2). Values are drawn by gen and rounded to dt, so the buffer holds them exactly.
func ewInput(t *testing.T, g *graph.Graph, dt tensor.DType, shape []int, view int, gen func() float64) ewIn {
	t.Helper()
	nd := len(shape)
	store := append([]int(nil), shape...)
	pos := func(idx []int) []int { return idx } // logical index -> index in the buffer
	mk := func(st tensor.Array) tensor.Array { return st }
	switch {
	case view == ewTransposed:
		for i, d := range shape {
			store[nd-1-i] = d
		}
		pos = func(idx []int) []int { return ewReversed(idx) }
		mk = func(st tensor.Array) tensor.Array { return tensor.Transpose(st) }
	case view == ewSliced && nd == 0:
		store = []int{5}
		pos = func([]int) []int { return []int{2} }
		mk = func(st tensor.Array) tensor.Array { return tensor.Reshape(tensor.Slice(st, []int{2}, []int{3})) }
	case view == ewSliced:
		one, two := make([]int, nd), make([]int, nd)
		for i, d := range shape {
			store[i], one[i], two[i] = 2*d+1, 1, 2
		}
		pos = func(idx []int) []int {
			j := make([]int, nd)
			for i, x := range idx {
				j[i] = 1 + 2*x
			}
			return j
		}
		mk = func(st tensor.Array) tensor.Array { return tensor.Slice(st, one, store, two...) }
	}
	var sv []float64
	for try := 0; ; try++ { // never all zeros
		sv = make([]float64, ewCount(store))
		nonzero := len(sv) == 0
		for i := range sv {
			sv[i] = ewRound(dt, gen())
			nonzero = nonzero || sv[i] != 0
		}
		if nonzero {
			break
		}
		require.Less(t, try, 100, "all-zero input")
	}
	in := ewIn{a: mk(tensor.FromValues(g, dt, sv, store...)), shape: shape}
	for _, idx := range ewIndices(shape) {
		in.vals = append(in.vals, sv[ewFlat(pos(idx), store)])
	}
	require.Equal(t, fmt.Sprint(shape), fmt.Sprint(in.a.Shape()))
	if l := in.a.Layout(); view == ewSliced {
		require.NotZero(t, l.Offset, "a sliced view has an offset")
	}
	return in
}

func ewReversed(s []int) []int {
	r := make([]int, len(s))
	for i, x := range s {
		r[len(s)-1-i] = x
	}
	return r
}

// ewGet evaluates a and returns its values through the public readers.
func ewGet(t *testing.T, a tensor.Array) []float64 {
	t.Helper()
	var out []float64
	switch dt := a.DType(); {
	case dt.IsFloat():
		v, err := a.Float32s()
		require.NoError(t, err)
		for _, x := range v {
			out = append(out, float64(x))
		}
	case dt == tensor.Int32:
		v, err := a.Int32s()
		require.NoError(t, err)
		for _, x := range v {
			out = append(out, float64(x))
		}
	case dt == tensor.Bool:
		v, err := a.Bools()
		require.NoError(t, err)
		for _, x := range v {
			out = append(out, ewB(x))
		}
	default:
		v, err := a.Float64s()
		require.NoError(t, err)
		out = v
	}
	return out
}

// ewCheck compares a's values with exact results want: float32 to 1e-6 relative with a
// 1e-9 floor, the half types equal to want rounded to the dtype (within ulps of it),
// integers and bools exactly. It returns the worst float32 relative error.
func ewCheck(t *testing.T, what string, a tensor.Array, want []float64, ulps float64) float64 {
	t.Helper()
	got := ewGet(t, a)
	require.Len(t, got, len(want), what)
	worst := 0.0
	for i, x := range want {
		switch dt := a.DType(); dt {
		case tensor.Float32:
			d := math.Abs(got[i] - x)
			require.LessOrEqual(t, d, 1e-6*math.Abs(x)+1e-9, "%s [%d]: got %v want %v", what, i, got[i], x)
			if x != 0 {
				worst = math.Max(worst, d/math.Abs(x))
			}
		case tensor.Float16, tensor.BFloat16:
			r := ewRound(dt, x)
			if ulps == 0 || math.IsInf(r, 0) {
				require.Equal(t, r, got[i], "%s [%d] (exact %v)", what, i, x)
			} else {
				require.LessOrEqual(t, math.Abs(got[i]-r), ulps*ewULP(dt, r), "%s [%d]: got %v want %v", what, i, got[i], r)
			}
		default:
			require.Equal(t, ewRound(dt, x), got[i], "%s [%d]", what, i)
		}
	}
	return worst
}

// ewBroadcast is the numpy broadcast of shapes.
func ewBroadcast(shapes ...[]int) []int {
	var out []int
	for _, s := range shapes {
		for len(out) < len(s) {
			out = append([]int{1}, out...)
		}
		for j, d := range s {
			if i := len(out) - len(s) + j; out[i] == 1 {
				out[i] = d
			}
		}
	}
	return out
}

func ewUniform(rng *rand.Rand, lo, hi float64) func() float64 {
	return func() float64 { return lo + rng.Float64()*(hi-lo) }
}

func ewPick(rng *rand.Rand, vs ...float64) func() float64 {
	return func() float64 { return vs[rng.Intn(len(vs))] }
}

type ewBinOp struct {
	f   func(a, b tensor.Array) tensor.Array
	ref func(a, b float64) float64
}

// ewBinary maps every binary op to its tensor function and a float64 reference.
var ewBinary = map[string]ewBinOp{
	"add":           {tensor.Add, func(a, b float64) float64 { return a + b }},
	"sub":           {tensor.Sub, func(a, b float64) float64 { return a - b }},
	"mul":           {tensor.Mul, func(a, b float64) float64 { return a * b }},
	"div":           {tensor.Div, func(a, b float64) float64 { return a / b }},
	"maximum":       {tensor.Maximum, func(a, b float64) float64 { return math.Max(a, b) }},
	"minimum":       {tensor.Minimum, func(a, b float64) float64 { return math.Min(a, b) }},
	"equal":         {tensor.Equal, func(a, b float64) float64 { return ewB(a == b) }},
	"not_equal":     {tensor.NotEqual, func(a, b float64) float64 { return ewB(a != b) }},
	"less":          {tensor.Less, func(a, b float64) float64 { return ewB(a < b) }},
	"less_equal":    {tensor.LessEqual, func(a, b float64) float64 { return ewB(a <= b) }},
	"greater":       {tensor.Greater, func(a, b float64) float64 { return ewB(a > b) }},
	"greater_equal": {tensor.GreaterEqual, func(a, b float64) float64 { return ewB(a >= b) }},
	"logical_and":   {tensor.LogicalAnd, func(a, b float64) float64 { return ewB(a != 0 && b != 0) }},
	"logical_or":    {tensor.LogicalOr, func(a, b float64) float64 { return ewB(a != 0 || b != 0) }},
}

func TestEWGraphBinary(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	rng := rand.New(rand.NewSource(21))
	cases := []struct {
		a, b   []int
		va, vb int
	}{
		{nil, nil, ewSliced, ewDense},
		{[]int{7}, []int{7}, ewSliced, ewDense},
		{[]int{3, 5}, []int{3, 5}, ewDense, ewDense},
		{[]int{9, 13}, nil, ewDense, ewSliced},
		{[]int{3, 5}, []int{3, 5}, ewTransposed, ewSliced},
		{[]int{2, 3, 5}, []int{3, 1}, ewSliced, ewTransposed},
		{[]int{4, 1, 3}, []int{2, 1}, ewTransposed, ewDense},
		{[]int{2, 1, 3, 5}, []int{1, 4, 1, 1}, ewDense, ewTransposed},
	}
	worst := 0.0
	for _, op := range kernels.BinaryOps {
		bo, ok := ewBinary[op.Name]
		require.True(t, ok, "no tensor function for binary op %s", op.Name)
		dts := []tensor.DType{tensor.Float32, tensor.Int32, tensor.Float16, tensor.BFloat16}
		if op.Cmp {
			dts = append(dts, tensor.Bool)
		}
		for _, dt := range dts {
			ga, gb := ewUniform(rng, -3, 3), ewUniform(rng, -3, 3)
			switch {
			case dt == tensor.Bool:
				ga, gb = ewPick(rng, 0, 1), ewPick(rng, 0, 1)
			case op.Cmp: // ties and zeros
				ga, gb = ewPick(rng, -1, -0.5, 0, 0.5, 1), ewPick(rng, -1, -0.5, 0, 0.5, 1)
			case dt == tensor.Int32 && op == kernels.OpDiv:
				ga, gb = func() float64 { return float64(rng.Intn(41) - 20) }, ewPick(rng, -7, -3, -2, 1, 2, 4, 9)
			case dt == tensor.Int32:
				ga = func() float64 { return float64(rng.Intn(41) - 20) }
				gb = ga
			case op == kernels.OpDiv:
				gb = func() float64 { return math.Copysign(0.5+2.5*rng.Float64(), rng.Float64()-0.5) }
			}
			if op.Cmp && dt == tensor.Int32 {
				ga, gb = ewPick(rng, -2, -1, 0, 1, 2), ewPick(rng, -2, -1, 0, 1, 2)
			}
			for ci, c := range cases {
				a := ewInput(t, g, dt, c.a, c.va, ga)
				b := ewInput(t, g, dt, c.b, c.vb, gb)
				r := bo.f(a.a, b.a)
				shape := ewBroadcast(c.a, c.b)
				require.Equal(t, fmt.Sprint(shape), fmt.Sprint(r.Shape()))
				wantDT := dt
				if op.Cmp {
					wantDT = tensor.Bool
				}
				require.Equal(t, wantDT, r.DType(), op.Name)
				var want []float64
				for _, idx := range ewIndices(shape) {
					want = append(want, bo.ref(a.at(idx), b.at(idx)))
				}
				worst = math.Max(worst, ewCheck(t, fmt.Sprintf("%s %s case %d", op.Name, dt, ci), r, want, 0))
			}
		}
	}
	t.Logf("worst float32 relative error %.3g", worst)
}

type ewUnOp struct {
	f   func(a tensor.Array) tensor.Array
	ref func(x float64) float64
}

func ewSigmoid(x float64) float64 {
	if x >= 0 {
		return 1 / (1 + math.Exp(-x))
	}
	return math.Exp(x) / (1 + math.Exp(x))
}

// ewUnary maps every unary op to its tensor function and a float64 reference.
var ewUnary = map[string]ewUnOp{
	"neg":      {tensor.Neg, func(x float64) float64 { return -x }},
	"exp":      {tensor.Exp, math.Exp},
	"log":      {tensor.Log, math.Log},
	"sqrt":     {tensor.Sqrt, math.Sqrt},
	"rsqrt":    {tensor.Rsqrt, func(x float64) float64 { return 1 / math.Sqrt(x) }},
	"sigmoid":  {tensor.Sigmoid, ewSigmoid},
	"silu":     {tensor.Silu, func(x float64) float64 { return x * ewSigmoid(x) }},
	"softplus": {tensor.Softplus, func(x float64) float64 { return math.Max(x, 0) + math.Log1p(math.Exp(-math.Abs(x))) }},
	"abs":      {tensor.Abs, math.Abs},
	"square":   {tensor.Square, func(x float64) float64 { return x * x }},
	"sin":      {tensor.Sin, math.Sin},
	"cos":      {tensor.Cos, math.Cos},
	"tanh": {tensor.Tanh, func(x float64) float64 {
		e := math.Expm1(-2 * math.Abs(x))
		return math.Copysign(-e/(2+e), x)
	}},
	"logical_not": {tensor.LogicalNot, func(x float64) float64 { return ewB(x == 0) }},
}

func TestEWGraphUnary(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	rng := rand.New(rand.NewSource(22))
	cases := []struct {
		shape []int
		view  int
	}{{nil, ewSliced}, {[]int{33}, ewDense}, {[]int{7}, ewSliced}, {[]int{3, 5}, ewTransposed},
		{[]int{2, 3, 5}, ewSliced}, {[]int{2, 1, 3, 4}, ewTransposed}}
	worst := 0.0
	for _, op := range kernels.UnaryOps {
		uo, ok := ewUnary[op.Name]
		require.True(t, ok, "no tensor function for unary op %s", op.Name)
		lo, hi := -4.0, 4.0
		switch op {
		case kernels.OpLog, kernels.OpSqrt, kernels.OpRsqrt:
			lo, hi = 0.01, 9
		case kernels.OpSigmoid, kernels.OpSilu, kernels.OpSoftplus, kernels.OpTanh:
			lo, hi = -40, 40
		}
		keepsInt := op == kernels.OpNeg || op == kernels.OpAbs || op == kernels.OpSquare
		ulps := 1.0 // the twin and the reference use different float64 formulas
		if keepsInt {
			ulps = 0
		}
		dts := []tensor.DType{tensor.Float32, tensor.Float16, tensor.BFloat16, tensor.Int32}
		if op == kernels.OpNot {
			dts = append(dts, tensor.Bool)
		}
		for _, dt := range dts {
			gen := ewUniform(rng, lo, hi)
			switch {
			case op == kernels.OpNot:
				gen = ewPick(rng, -1.5, 0, 0, 2)
			case dt == tensor.Int32:
				gen = func() float64 { return math.Ceil(lo) + float64(rng.Intn(int(hi-math.Ceil(lo))+1)) }
			}
			wantDT := dt
			switch {
			case op == kernels.OpNot:
				wantDT = tensor.Bool
			case dt == tensor.Int32 && !keepsInt:
				wantDT = tensor.Float32
			}
			check := func(what string, in ewIn, r tensor.Array) {
				require.Equal(t, wantDT, r.DType(), what)
				require.Equal(t, fmt.Sprint(in.shape), fmt.Sprint(r.Shape()), what)
				var want []float64
				for _, idx := range ewIndices(in.shape) {
					want = append(want, uo.ref(in.at(idx)))
				}
				worst = math.Max(worst, ewCheck(t, what, r, want, ulps))
			}
			for ci, c := range cases {
				in := ewInput(t, g, dt, c.shape, c.view, gen)
				check(fmt.Sprintf("%s %s case %d", op.Name, dt, ci), in, uo.f(in.a))
			}
			// A broadcast view with a new axis: stride 0 and a size-1 dim.
			col := ewInput(t, g, dt, []int{3, 1}, ewDense, gen)
			bv := tensor.ExpandDims(tensor.BroadcastTo(col.a, 3, 4), 1)
			exp := ewIn{shape: []int{3, 1, 4}}
			for _, idx := range ewIndices(exp.shape) {
				exp.vals = append(exp.vals, col.vals[idx[0]])
			}
			check(fmt.Sprintf("%s %s broadcast", op.Name, dt), exp, uo.f(bv))
		}
	}
	t.Logf("worst float32 relative error %.3g", worst)
}
