package tensor

import (
	"github.com/ingotml/ingot/kernels"
)

// BroadcastShapes returns the numpy broadcast of shapes, or panics with a ShapeError.
func BroadcastShapes(op string, shapes ...[]int) []int {
	nd := 0
	for _, s := range shapes {
		nd = max(nd, len(s))
	}
	out := make([]int, nd)
	for i := range out {
		out[i] = 1
	}
	for _, s := range shapes {
		lead := nd - len(s)
		for j, d := range s {
			o := &out[lead+j]
			switch {
			case d == *o || d == 1:
			case *o == 1:
				*o = d
			default:
				shapePanic(op, "shapes %v do not broadcast", shapes)
			}
		}
	}
	return out
}

// promote is the common dtype of a binary op: floats win over integers, float32 over
// the half types (and float16 with bfloat16 gives float32), int32 over uint32, all over bool.
func promote(a, b DType) DType {
	if a == b {
		return a
	}
	rank := func(d DType) int {
		switch d {
		case Float32:
			return 5
		case Float16, BFloat16:
			return 4
		case Int32:
			return 3
		case UInt32:
			return 2
		}
		return 1
	}
	if a.IsFloat() && b.IsFloat() && rank(a) == rank(b) {
		return Float32
	}
	if rank(a) >= rank(b) {
		return a
	}
	return b
}

func same(op string, a, b Array) {
	if a.h == nil || b.h == nil {
		shapePanic(op, "invalid array")
	}
	if a.Graph() != b.Graph() {
		shapePanic(op, "arrays from different graphs")
	}
}

func binary(op *kernels.BinaryOp, a, b Array) Array {
	same(op.Name, a, b)
	la, lb := a.h.LayoutRef(), b.h.LayoutRef() // no copies: this is the hottest op
	dt := promote(la.DType, lb.DType)
	if la.DType != dt || lb.DType != dt {
		a, b = a.AsType(dt), b.AsType(dt)
		la, lb = a.h.LayoutRef(), b.h.LayoutRef()
	}
	out := dt
	if op.Cmp {
		out = Bool
	}
	var ol kernels.Layout
	if kernels.SameShape(la, lb) {
		ol = contiguousLike(out, la)
	} else {
		ol = kernels.Contiguous(out, BroadcastShapes(op.Name, la.Dims(), lb.Dims())...)
	}
	return Array{a.Graph().ApplyLayout(kernels.BinaryKernel(op), nil, ol, a.h, b.h)}
}

// contiguousLike is the dense layout of l's shape with dtype dt.
func contiguousLike(dt DType, l *kernels.Layout) kernels.Layout {
	r := kernels.Layout{NDim: l.NDim, DType: dt}
	st := 1
	for i := l.NDim - 1; i >= 0; i-- {
		r.Shape[i] = l.Shape[i]
		r.Strides[i] = st
		st *= l.Shape[i]
	}
	return r
}

// Add returns a + b (broadcasting).
func Add(a, b Array) Array { return binary(kernels.OpAdd, a, b) }

// Sub returns a - b.
func Sub(a, b Array) Array { return binary(kernels.OpSub, a, b) }

// Mul returns a * b.
func Mul(a, b Array) Array { return binary(kernels.OpMul, a, b) }

// Div returns a / b.
func Div(a, b Array) Array { return binary(kernels.OpDiv, a, b) }

// Maximum returns the elementwise maximum.
func Maximum(a, b Array) Array { return binary(kernels.OpMaximum, a, b) }

// Minimum returns the elementwise minimum.
func Minimum(a, b Array) Array { return binary(kernels.OpMinimum, a, b) }

// Equal returns a == b as bool.
func Equal(a, b Array) Array { return binary(kernels.OpEqual, a, b) }

// NotEqual returns a != b as bool.
func NotEqual(a, b Array) Array { return binary(kernels.OpNotEq, a, b) }

// Less returns a < b as bool.
func Less(a, b Array) Array { return binary(kernels.OpLess, a, b) }

// LessEqual returns a <= b as bool.
func LessEqual(a, b Array) Array { return binary(kernels.OpLessEq, a, b) }

// Greater returns a > b as bool.
func Greater(a, b Array) Array { return binary(kernels.OpGreater, a, b) }

// GreaterEqual returns a >= b as bool.
func GreaterEqual(a, b Array) Array { return binary(kernels.OpGreatEq, a, b) }

// LogicalAnd returns a && b as bool.
func LogicalAnd(a, b Array) Array { return binary(kernels.OpAnd, a, b) }

// LogicalOr returns a || b as bool.
func LogicalOr(a, b Array) Array { return binary(kernels.OpOr, a, b) }

// scalarLike makes a fresh 0-d array of a's dtype: one new live buffer, right now.
func scalarLike(a Array, v float64) Array { return Scalar(a.Graph(), v, a.DType()) }

// AddScalar returns a + v; v becomes a fresh scalar array of a's dtype (as in MLX).
func AddScalar(a Array, v float64) Array { return Add(a, scalarLike(a, v)) }

// SubScalar returns a - v with a fresh scalar, the op behind mlx-lm's `left_padding -= S`.
func SubScalar(a Array, v float64) Array { return Sub(a, scalarLike(a, v)) }

// MulScalar returns a * v with a fresh scalar.
func MulScalar(a Array, v float64) Array { return Mul(a, scalarLike(a, v)) }

// DivScalar returns a / v with a fresh scalar.
func DivScalar(a Array, v float64) Array { return Div(a, scalarLike(a, v)) }

func unary(op *kernels.UnaryOp, a Array) Array {
	if a.h == nil {
		shapePanic(op.Name, "invalid array")
	}
	dt := a.DType()
	if op == kernels.OpNot {
		dt = Bool
		a = a.AsType(Bool) // both twins read bytes: x != 0 first
	} else if !dt.IsFloat() && op != kernels.OpNeg && op != kernels.OpAbs && op != kernels.OpSquare {
		dt = Float32
		a = a.AsType(dt)
	}
	l := a.Layout()
	return Array{a.Graph().ApplyLayout(kernels.UnaryKernel(op), nil, contiguousLike(dt, &l), a.h)}
}

// Neg returns -a.
func Neg(a Array) Array { return unary(kernels.OpNeg, a) }

// Exp returns e^a.
func Exp(a Array) Array { return unary(kernels.OpExp, a) }

// Log returns the natural logarithm.
func Log(a Array) Array { return unary(kernels.OpLog, a) }

// Sqrt returns the square root.
func Sqrt(a Array) Array { return unary(kernels.OpSqrt, a) }

// Rsqrt returns 1/sqrt(a).
func Rsqrt(a Array) Array { return unary(kernels.OpRsqrt, a) }

// Sigmoid returns 1/(1+e^-a).
func Sigmoid(a Array) Array { return unary(kernels.OpSigmoid, a) }

// Silu returns a*sigmoid(a).
func Silu(a Array) Array { return unary(kernels.OpSilu, a) }

// Softplus returns log(1+e^a).
func Softplus(a Array) Array { return unary(kernels.OpSoftplus, a) }

// Abs returns |a|.
func Abs(a Array) Array { return unary(kernels.OpAbs, a) }

// Square returns a*a.
func Square(a Array) Array { return unary(kernels.OpSquare, a) }

// Sin returns sin(a).
func Sin(a Array) Array { return unary(kernels.OpSin, a) }

// Cos returns cos(a).
func Cos(a Array) Array { return unary(kernels.OpCos, a) }

// Tanh returns tanh(a).
func Tanh(a Array) Array { return unary(kernels.OpTanh, a) }

// LogicalNot returns !a as bool.
func LogicalNot(a Array) Array { return unary(kernels.OpNot, a) }

// Where returns cond ? a : b (broadcasting; cond is cast to bool).
func Where(cond, a, b Array) Array {
	same("where", cond, a)
	same("where", a, b)
	dt := promote(a.DType(), b.DType())
	a, b, cond = a.AsType(dt), b.AsType(dt), cond.AsType(Bool)
	shape := BroadcastShapes("where", cond.Shape(), a.Shape(), b.Shape())
	return Array{a.Graph().Apply(kernels.KWhere, nil, dt, shape, cond.h, a.h, b.h)}
}

// AsType casts a to dt (a no-op returning a itself when the dtype already matches).
func (a Array) AsType(dt DType) Array {
	if a.DType() == dt {
		return a
	}
	return Array{a.Graph().Apply(kernels.KCopy, nil, dt, a.Shape(), a.h)}
}

// Contiguous returns a dense row-major copy of a, or a itself when it already is one.
func Contiguous(a Array) Array {
	l := a.Layout()
	if l.IsContiguous() {
		return a
	}
	return Array{a.Graph().Apply(kernels.KCopy, nil, l.DType, a.Shape(), a.h)}
}

// Copy returns a new dense array with a's values (always a new node).
func Copy(a Array) Array {
	return Array{a.Graph().Apply(kernels.KCopy, nil, a.DType(), a.Shape(), a.h)}
}
