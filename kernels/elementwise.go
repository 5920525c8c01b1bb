package kernels

import "math"

// Elementwise families: binary arithmetic, comparisons, unary math, where, cast/copy and
// arange. Inputs arrive as views broadcast to the output's shape (stride 0 on broadcast
// dims); the output is contiguous. Arithmetic happens in float64 on the generic path and
// in float32 on the float32 fast paths, so float32 results are exact to rounding either way.

// BinaryOp names a binary elementwise operation.
type BinaryOp struct {
	Name string
	F64  func(a, b float64) float64
	F32  func(a, b float32) float32 // nil: use F64
	Cmp  bool                       // the output is bool
}

// The binary operations, each registered as kernel "binary_<name>".
var (
	OpAdd     = &BinaryOp{Name: "add", F64: func(a, b float64) float64 { return a + b }, F32: func(a, b float32) float32 { return a + b }}
	OpSub     = &BinaryOp{Name: "sub", F64: func(a, b float64) float64 { return a - b }, F32: func(a, b float32) float32 { return a - b }}
	OpMul     = &BinaryOp{Name: "mul", F64: func(a, b float64) float64 { return a * b }, F32: func(a, b float32) float32 { return a * b }}
	OpDiv     = &BinaryOp{Name: "div", F64: divide, F32: func(a, b float32) float32 { return a / b }}
	OpMaximum = &BinaryOp{Name: "maximum", F64: math.Max, F32: func(a, b float32) float32 { return float32(math.Max(float64(a), float64(b))) }}
	OpMinimum = &BinaryOp{Name: "minimum", F64: math.Min, F32: func(a, b float32) float32 { return float32(math.Min(float64(a), float64(b))) }}
	OpEqual   = &BinaryOp{Name: "equal", Cmp: true, F64: func(a, b float64) float64 { return b2f(a == b) }}
	OpNotEq   = &BinaryOp{Name: "not_equal", Cmp: true, F64: func(a, b float64) float64 { return b2f(a != b) }}
	OpLess    = &BinaryOp{Name: "less", Cmp: true, F64: func(a, b float64) float64 { return b2f(a < b) }}
	OpLessEq  = &BinaryOp{Name: "less_equal", Cmp: true, F64: func(a, b float64) float64 { return b2f(a <= b) }}
	OpGreater = &BinaryOp{Name: "greater", Cmp: true, F64: func(a, b float64) float64 { return b2f(a > b) }}
	OpGreatEq = &BinaryOp{Name: "greater_equal", Cmp: true, F64: func(a, b float64) float64 { return b2f(a >= b) }}
	OpAnd     = &BinaryOp{Name: "logical_and", Cmp: true, F64: func(a, b float64) float64 { return b2f(a != 0 && b != 0) }}
	OpOr      = &BinaryOp{Name: "logical_or", Cmp: true, F64: func(a, b float64) float64 { return b2f(a != 0 || b != 0) }}
)

// BinaryOps lists every binary operation.
var BinaryOps = []*BinaryOp{OpAdd, OpSub, OpMul, OpDiv, OpMaximum, OpMinimum, OpEqual, OpNotEq,
	OpLess, OpLessEq, OpGreater, OpGreatEq, OpAnd, OpOr}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// divide is float division; integer dtypes truncate when stored.
func divide(a, b float64) float64 { return a / b }

// UnaryOp names a unary elementwise operation.
type UnaryOp struct {
	Name string
	F64  func(float64) float64
}

func sigmoid(x float64) float64 { return 1 / (1 + math.Exp(-x)) }

// softplus is log(1+e^x), computed without overflow.
func softplus(x float64) float64 {
	if x > 20 {
		return x
	}
	return math.Log1p(math.Exp(x))
}

// The unary operations, each registered as kernel "unary_<name>".
var (
	OpNeg      = &UnaryOp{"neg", func(x float64) float64 { return -x }}
	OpExp      = &UnaryOp{"exp", math.Exp}
	OpLog      = &UnaryOp{"log", math.Log}
	OpSqrt     = &UnaryOp{"sqrt", math.Sqrt}
	OpRsqrt    = &UnaryOp{"rsqrt", func(x float64) float64 { return 1 / math.Sqrt(x) }}
	OpSigmoid  = &UnaryOp{"sigmoid", sigmoid}
	OpSilu     = &UnaryOp{"silu", func(x float64) float64 { return x * sigmoid(x) }}
	OpSoftplus = &UnaryOp{"softplus", softplus}
	OpAbs      = &UnaryOp{"abs", math.Abs}
	OpSquare   = &UnaryOp{"square", func(x float64) float64 { return x * x }}
	OpSin      = &UnaryOp{"sin", math.Sin}
	OpCos      = &UnaryOp{"cos", math.Cos}
	OpTanh     = &UnaryOp{"tanh", math.Tanh}
	OpNot      = &UnaryOp{"logical_not", func(x float64) float64 { return b2f(x == 0) }}
)

// UnaryOps lists every unary operation.
var UnaryOps = []*UnaryOp{OpNeg, OpExp, OpLog, OpSqrt, OpRsqrt, OpSigmoid, OpSilu, OpSoftplus,
	OpAbs, OpSquare, OpSin, OpCos, OpTanh, OpNot}

var binaryKernels = map[*BinaryOp]*Kernel{}
var unaryKernels = map[*UnaryOp]*Kernel{}

// BinaryKernel returns the registered kernel of op.
func BinaryKernel(op *BinaryOp) *Kernel { return binaryKernels[op] }

// UnaryKernel returns the registered kernel of op.
func UnaryKernel(op *UnaryOp) *Kernel { return unaryKernels[op] }

func init() {
	for _, op := range BinaryOps {
		op := op
		binaryKernels[op] = Register(&Kernel{Name: "binary_" + op.Name, Family: "binary",
			CPU: func(l *Launch) { binaryCPU(op, l) }, Donates: !op.Cmp, Broadcasts: true})
	}
	for _, op := range UnaryOps {
		op := op
		unaryKernels[op] = Register(&Kernel{Name: "unary_" + op.Name, Family: "unary",
			CPU: func(l *Launch) { unaryCPU(op, l) }, Donates: true}) // logical_not reads bools: the tensor op casts first, so sizes match
	}
}

// binaryCPU computes out = op(a, b): Args a, b, out.
func binaryCPU(op *BinaryOp, l *Launch) {
	a, b, o := &l.Args[0], &l.Args[1], &l.Args[2]
	if a.DType == Float32 && b.DType == Float32 && o.DType == Float32 && op.F32 != nil {
		if binaryF32Fast(op, a, b, o, l.Helper) {
			return
		}
	}
	if op.F32 != nil && halfViaF32(l.Helper, o.Size(), []*Arg{a, b}, o, func(in [][]float32, out []float32) {
		binaryF32(op, in[0], in[1], out)
	}) {
		return
	}
	w := newRowWalk(&o.Layout, &a.Layout, &b.Layout, &o.Layout)
	if row := maskRow(op, a, b, o); row != nil {
		w.rows(row)
		return
	}
	f := op.F64
	w.rows(func(n int, off, inc [4]int) {
		ia, ib, io := off[0], off[1], off[2]
		for i := 0; i < n; i++ {
			Store(o.DType, o.Data, io, f(Load(a.DType, a.Data, ia), Load(b.DType, b.Data, ib)))
			ia += inc[0]
			ib += inc[1]
			io += inc[2]
		}
	})
}

// maskRow returns a row loop for the ops that build attention masks (int32 comparisons
// and bool logic), or nil. A decode step runs them over every stored position, so they
// take a typed compare per element instead of the generic path's float64 round trip; an
// int32 converts to float64 exactly, so the results are the same.
func maskRow(op *BinaryOp, a, b, o *Arg) func(n int, off, inc [4]int) {
	if o.DType != Bool {
		return nil
	}
	ov := o.Data
	if a.DType == Int32 && b.DType == Int32 {
		av, bv := I32(a.Data), I32(b.Data)
		if op != OpLess && op != OpGreatEq {
			return nil
		}
		ge := op == OpGreatEq // x >= y is !(x < y) for integers
		return func(n int, off, inc [4]int) {
			ia, ib, io := off[0], off[1], off[2]
			if inc[2] == 1 && inc[0] <= 1 && inc[1] <= 1 && inc[0]+inc[1] > 0 {
				// A decode mask's rows: both dense, or one side a single value.
				cmpRowI32(ov[io:io+n], av[ia:], inc[0], bv[ib:], inc[1], ge)
				return
			}
			for i := 0; i < n; i++ {
				ov[io] = boolByte((av[ia] < bv[ib]) != ge)
				ia += inc[0]
				ib += inc[1]
				io += inc[2]
			}
		}
	}
	if a.DType == Bool && b.DType == Bool && op == OpAnd {
		av, bv := a.Data, b.Data
		return func(n int, off, inc [4]int) {
			ia, ib, io := off[0], off[1], off[2]
			if inc == [4]int{1, 1, 1} {
				x, y, dst := av[ia:ia+n], bv[ib:ib+n], ov[io:io+n]
				for i := range dst {
					dst[i] = boolByte(x[i] != 0) & boolByte(y[i] != 0) // no branch per element
				}
				return
			}
			for i := 0; i < n; i++ {
				ov[io] = boolByte(av[ia] != 0 && bv[ib] != 0)
				ia += inc[0]
				ib += inc[1]
				io += inc[2]
			}
		}
	}
	return nil
}

// cmpRowI32 writes dst[i] = (a[i*sa] < b[i*sb]) != ge for strides sa, sb of 0 or 1,
// not both 0: a loop per case, so the compiler drops the index arithmetic.
func cmpRowI32(dst []byte, a []int32, sa int, b []int32, sb int, ge bool) {
	n := len(dst)
	switch {
	case sa == 1 && sb == 1:
		a, b = a[:n], b[:n]
		for i := range dst {
			dst[i] = boolByte((a[i] < b[i]) != ge)
		}
	case sa == 1:
		a, y := a[:n], b[0]
		for i := range dst {
			dst[i] = boolByte((a[i] < y) != ge)
		}
	default:
		x, b := a[0], b[:n]
		for i := range dst {
			dst[i] = boolByte((x < b[i]) != ge)
		}
	}
}

func boolByte(v bool) byte {
	if v {
		return 1
	}
	return 0
}

// binAVXCode is binF32AVX's operation code for op, if it takes op.
func binAVXCode(op *BinaryOp) (int, bool) {
	switch op {
	case OpAdd:
		return 0, true
	case OpSub:
		return 1, true
	case OpMul:
		return 2, true
	case OpDiv:
		return 3, true
	}
	return 0, false
}

// binaryF32 writes ov[i] = av[i] op bv[i] (equal lengths; ov may be av or bv): one
// rounded float32 operation per element (op.F32).
func binaryF32(op *BinaryOp, av, bv, ov []float32) {
	n := len(ov)
	av, bv = av[:n], bv[:n]
	if code, ok := binAVXCode(op); ok && useAVX && n >= 8 {
		// Eight lanes at a time, the same rounded operation per element; the tail below.
		n8 := n / 8
		binF32AVX(code, &ov[0], &av[0], &bv[0], n8)
		ov, av, bv = ov[n8*8:], av[n8*8:], bv[n8*8:]
	}
	switch op {
	case OpAdd:
		for i := range ov {
			ov[i] = av[i] + bv[i]
		}
	case OpSub:
		for i := range ov {
			ov[i] = av[i] - bv[i]
		}
	case OpMul:
		for i := range ov {
			ov[i] = av[i] * bv[i]
		}
	default:
		f := op.F32
		for i := range ov {
			ov[i] = f(av[i], bv[i])
		}
	}
}

// binaryF32Fast handles dense float32 operands and a scalar-broadcast right operand.
func binaryF32Fast(op *BinaryOp, a, b, o *Arg, h *Helper) bool {
	n := o.Size()
	if !a.IsContiguous() || !o.IsContiguous() {
		return false
	}
	av := F32(a.Data)[a.Offset : a.Offset+n]
	ov := F32(o.Data)[o.Offset : o.Offset+n]
	switch {
	case b.IsContiguous() && SameShape(&a.Layout, &b.Layout):
		bv := F32(b.Data)[b.Offset : b.Offset+n]
		h.splitElemsAligned(n, func(i0, i1 int) { binaryF32(op, av[i0:i1], bv[i0:i1], ov[i0:i1]) })
		return true
	case allZeroStrides(&b.Layout):
		s := F32(b.Data)[b.Offset]
		switch op {
		case OpAdd:
			for i := range ov {
				ov[i] = av[i] + s
			}
		case OpMul:
			for i := range ov {
				ov[i] = av[i] * s
			}
		default:
			f := op.F32
			for i := range ov {
				ov[i] = f(av[i], s)
			}
		}
		return true
	}
	return false
}

func allZeroStrides(l *Layout) bool {
	for i := 0; i < l.NDim; i++ {
		if l.Strides[i] != 0 && l.Shape[i] != 1 {
			return false
		}
	}
	return true
}

// unaryCPU computes out = op(a): Args a, out.
func unaryCPU(op *UnaryOp, l *Launch) {
	a, o := &l.Args[0], &l.Args[1]
	f := op.F64
	if a.DType == Float32 && o.DType == Float32 && a.IsContiguous() {
		n := o.Size()
		av := F32(a.Data)[a.Offset : a.Offset+n]
		ov := F32(o.Data)[o.Offset : o.Offset+n]
		l.Helper.splitElemsAligned(n, func(i0, i1 int) { unaryF32(op, av[i0:i1], ov[i0:i1]) })
		return
	}
	if (op == OpSilu || op == OpSigmoid) && halfViaF32(l.Helper, o.Size(), []*Arg{a}, o, func(in [][]float32, out []float32) {
		unaryF32(op, in[0], out)
	}) {
		return
	}
	w := newRowWalk(&o.Layout, &a.Layout, &o.Layout)
	w.rows(func(n int, off, inc [4]int) {
		ia, io := off[0], off[1]
		for i := 0; i < n; i++ {
			Store(o.DType, o.Data, io, f(Load(a.DType, a.Data, ia)))
			ia += inc[0]
			io += inc[1]
		}
	})
}

// ones is a block of 1s, the numerator or addend of unaryF32's blocks.
var ones = func() (b [256]float32) {
	for i := range b {
		b[i] = 1
	}
	return
}()

// unaryF32 is the dense float32 path: silu and sigmoid take exp32 (float32, vectorised
// by expArray) in blocks; out may be the input (each element is read before written).
func unaryF32(op *UnaryOp, av, ov []float32) {
	switch op {
	case OpSilu, OpSigmoid:
		var buf [256]float32
		for c := 0; c < len(av); c += len(buf) {
			a := av[c:min(c+len(buf), len(av))]
			o, e := ov[c:c+len(a)], buf[:len(a)]
			expArray(e, a, -1, 0)
			// o = a / (1 + e) or 1 / (1 + e), each operation rounded as Go rounds it.
			binaryF32(OpAdd, ones[:len(a)], e, e)
			num := a
			if op == OpSigmoid {
				num = ones[:len(a)]
			}
			binaryF32(OpDiv, num, e, o)
		}
	case OpExp:
		for i, x := range av {
			ov[i] = float32(expF64(float64(x)))
		}
	default:
		f := op.F64
		for i, x := range av {
			ov[i] = float32(f(float64(x)))
		}
	}
}

// KWhere selects: out = cond ? a : b. Args cond (bool), a, b, out.
var KWhere = Register(&Kernel{Name: "where", Family: "where", CPU: whereCPU, Broadcasts: true})

func whereCPU(l *Launch) {
	c, a, b, o := &l.Args[0], &l.Args[1], &l.Args[2], &l.Args[3]
	if o.DType == Float32 && a.DType == Float32 && b.DType == Float32 && c.IsContiguous() &&
		a.IsContiguous() && b.IsContiguous() && SameShape(&c.Layout, &o.Layout) &&
		SameShape(&a.Layout, &o.Layout) && SameShape(&b.Layout, &o.Layout) {
		n := o.Size()
		cv := c.Data[c.Offset : c.Offset+n]
		av, bv := F32(a.Data)[a.Offset:a.Offset+n], F32(b.Data)[b.Offset:b.Offset+n]
		ov := F32(o.Data)[o.Offset : o.Offset+n]
		for i := range ov {
			if cv[i] != 0 {
				ov[i] = av[i]
			} else {
				ov[i] = bv[i]
			}
		}
		return
	}
	w := newRowWalk(&o.Layout, &c.Layout, &a.Layout, &b.Layout, &o.Layout)
	if a.DType == o.DType && b.DType == o.DType && o.DType.Size() == 4 {
		// Broadcast operands (a scalar fill, say) of one 4-byte dtype: the bits as they are.
		w.rows(whereRow(c.Data, U32(a.Data), U32(b.Data), U32(o.Data)))
		return
	}
	if a.DType == o.DType && b.DType == o.DType && o.DType.Size() == 2 {
		w.rows(whereRow(c.Data, U16(a.Data), U16(b.Data), U16(o.Data)))
		return
	}
	w.rows(func(n int, off, inc [4]int) {
		ic, ia, ib, io := off[0], off[1], off[2], off[3]
		for i := 0; i < n; i++ {
			v := Load(b.DType, b.Data, ib)
			if c.Data[ic] != 0 {
				v = Load(a.DType, a.Data, ia)
			}
			Store(o.DType, o.Data, io, v)
			ic += inc[0]
			ia += inc[1]
			ib += inc[2]
			io += inc[3]
		}
	})
}

// KCopy copies (and casts) any strided layout into a contiguous output: contiguous copy,
// slice materialisation, transposition, broadcast and dtype casts all use it. Args in, out.
var KCopy = Register(&Kernel{Name: "copy", Family: "copy", CPU: copyCPU})

func copyCPU(l *Launch) { copyArgs(&l.Args[0], &l.Args[1], l.Helper) }

// copyArgs copies (and casts) a into o, which has a's shape; concatenate and
// slice_update copy their regions with it. From splitElems elements a plain or
// strided copy splits its rows between the cores through h (nil: a goroutine of its
// own takes the second half; a prefill's activations and transposed heads).
func copyArgs(a, o *Arg, h *Helper) {
	n := o.Size()
	if a.IsContiguous() && o.IsContiguous() {
		if a.DType == o.DType {
			sz := a.DType.Size()
			ob, ab := o.Data[o.Offset*sz:], a.Data[a.Offset*sz:]
			if n < splitElems { // a decode step's copies: no closure
				copy(ob[:n*sz], ab[:n*sz])
				return
			}
			h.splitElemsAligned(n, func(i0, i1 int) { copy(ob[i0*sz:i1*sz], ab[i0*sz:i1*sz]) })
			return
		}
		if castsDense(a, o) {
			h.splitElemsAligned(n, func(i0, i1 int) { castDense(a, o, i0, i1) })
			return
		}
	}
	w := newRowWalk(&o.Layout, &a.Layout, &o.Layout)
	row := copyRow(a, o)
	if row == nil {
		row = castRow(a, o)
	}
	if row == nil {
		row = func(n int, off, inc [4]int) {
			ia, io := off[0], off[1]
			for i := 0; i < n; i++ {
				Store(o.DType, o.Data, io, Load(a.DType, a.Data, ia))
				ia += inc[0]
				io += inc[1]
			}
		}
	}
	rows := w.numRows()
	if n < splitElems {
		w.rowRange(0, rows, row)
		return
	}
	h.splitRows(rows, n/max(1, rows), func(r0, r1 int) { w.rowRange(r0, r1, row) })
}

// copyRow returns the row loop of a copy of 2- or 4-byte elements of one dtype (the
// bits as they are: no conversion per element), or nil.
func copyRow(a, o *Arg) func(n int, off, inc [4]int) {
	if a.DType != o.DType {
		return nil
	}
	switch a.DType.Size() {
	case 4:
		return stridedRow(U32(a.Data), U32(o.Data))
	case 2:
		return stridedRow(U16(a.Data), U16(o.Data))
	}
	return nil
}

// stridedRow copies one row of a strided view: a dense row (a slice) at once.
func stridedRow[E uint16 | uint32](as, os []E) func(n int, off, inc [4]int) {
	return func(n int, off, inc [4]int) {
		ia, io := off[0], off[1]
		if inc[0] == 1 && inc[1] == 1 {
			copy(os[io:io+n], as[ia:ia+n])
			return
		}
		for i := 0; i < n; i++ {
			os[io] = as[ia]
			ia += inc[0]
			io += inc[1]
		}
	}
}

// ArangeParams is the parameter struct of KArange: out[i] = Start + i*Step.
type ArangeParams struct{ Start, Step float64 }

// arangeConsts is arange's setBytes struct: ArangeParams in float, and the count.
type arangeConsts struct {
	N     int     `msl:"n"`
	Start float32 `msl:"start"`
	Step  float32 `msl:"step"`
}

// KArange fills a 1-D output. Args out.
var KArange = Register(&Kernel{Name: "arange", Family: "arange", CPU: func(l *Launch) {
	p := l.Params.(*ArangeParams)
	o := l.Out()
	if o.DType == Int32 { // the mask's positions, every step: Store's conversion, unswitched
		out := I32(o.Data)[o.Offset : o.Offset+o.Size()]
		for i := range out {
			out[i] = int32(p.Start + float64(i)*p.Step)
		}
		return
	}
	for i := 0; i < o.Size(); i++ {
		Store(o.DType, o.Data, o.Offset+i, p.Start+float64(i)*p.Step)
	}
}, Encode: func(l *Launch, e Encoder) {
	p := l.Params.(*ArangeParams)
	o := l.Out()
	e.Entry("arange_" + o.DType.String())
	e.SetArg(0, o)
	e.SetBytes(1, mslPack(&arangeConsts{N: o.Size(), Start: float32(p.Start), Step: float32(p.Step)}))
	e.DispatchThreads(Groups1DFor(o.Size(), e))
}})
