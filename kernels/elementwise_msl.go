package kernels

import "math/rand"

// Metal twins of the elementwise families (binary, unary, where, copy): entries per
// dtype with the op as a parameter, one thread per output element, strided inputs
// described by MSLLayout blocks (the element offset travels as the binding offset).

// The op codes of the binary and unary MSL twins, by op name: the same values as the
// BinaryCode and UnaryCode enums of binary.metal and unary.metal (TestOpCodes checks
// both tables against the MSL source).
var (
	binaryCodes = map[string]int32{
		"add": 0, "sub": 1, "mul": 2, "div": 3, "maximum": 4, "minimum": 5, "equal": 6,
		"not_equal": 7, "less": 8, "less_equal": 9, "greater": 10, "greater_equal": 11,
		"logical_and": 12, "logical_or": 13,
	}
	unaryCodes = map[string]int32{
		"neg": 0, "exp": 1, "log": 2, "sqrt": 3, "rsqrt": 4, "sigmoid": 5, "silu": 6,
		"softplus": 7, "abs": 8, "square": 9, "sin": 10, "cos": 11, "tanh": 12,
		"logical_not": 13,
	}
)

// opCode is an op's MSL code; an op without one makes Encode panic, which the Metal
// device reports as the launch's error.
func opCode(codes map[string]int32, name string) int32 {
	c, ok := codes[name]
	if !ok {
		panic("kernels: op " + name + " has no MSL code")
	}
	return c
}

// strided is one strided argument of an elementwise MSL twin. The kernels never read
// Offset: the element offset travels as the 64-bit buffer binding offset, and the field
// keeps its low 32 bits for the record.
type strided struct {
	NDim    int          `msl:"ndim"`
	Offset  int32        `msl:"offset"` // applied by the host as the buffer binding offset
	Shape   [MaxDims]int `msl:"shape"`
	Strides [MaxDims]int `msl:"strides"`
}

// stridedOf is a layout as an MSL parameter block.
func stridedOf(l *Layout) strided {
	m := strided{NDim: l.NDim, Offset: int32(l.Offset)}
	copy(m.Shape[:l.NDim], l.Shape[:l.NDim])
	copy(m.Strides[:l.NDim], l.Strides[:l.NDim])
	return m
}

// The setBytes structs of the elementwise twins: the op's code, the element count and
// each argument's layout.
type (
	binaryConsts struct {
		Op int32   `msl:"op"`
		N  int     `msl:"n"`
		A  strided `msl:"a"`
		B  strided `msl:"b"`
	}
	unaryConsts struct {
		Op int32   `msl:"op"`
		N  int     `msl:"n"`
		A  strided `msl:"a"`
	}
	whereConsts struct {
		N int     `msl:"n"`
		C strided `msl:"c"`
		A strided `msl:"a"`
		B strided `msl:"b"`
	}
	copyConsts struct {
		N   int     `msl:"n"`
		Src strided `msl:"src"`
		Dst strided `msl:"dst"`
	}
)

// dtypeEntry names an MSL entry for a dtype ("float32", "int32", "bool").
func dtypeEntry(prefix string, d DType) string { return prefix + "_" + d.String() }

func encodeBinary(op *BinaryOp, l *Launch, e Encoder) {
	a, b, o := &l.Args[0], &l.Args[1], &l.Args[2]
	prefix := "binary"
	if op.Cmp {
		prefix = "compare"
	}
	e.Entry(dtypeEntry(prefix, a.DType))
	e.SetArg(0, a)
	e.SetArg(1, b)
	e.SetArg(2, o)
	n := o.Size()
	e.SetBytes(3, mslPack(&binaryConsts{Op: opCode(binaryCodes, op.Name), N: n, A: stridedOf(&a.Layout), B: stridedOf(&b.Layout)}))
	e.DispatchThreads(Groups1DFor(n, e))
}

func encodeUnary(op *UnaryOp, l *Launch, e Encoder) {
	a, o := &l.Args[0], &l.Args[1]
	if op == OpNot {
		e.Entry("logical_not_bool")
	} else {
		e.Entry(dtypeEntry("unary", a.DType))
	}
	e.SetArg(0, a)
	e.SetArg(1, o)
	n := o.Size()
	e.SetBytes(2, mslPack(&unaryConsts{Op: opCode(unaryCodes, op.Name), N: n, A: stridedOf(&a.Layout)}))
	e.DispatchThreads(Groups1DFor(n, e))
}

func encodeWhere(l *Launch, e Encoder) {
	c, a, b, o := &l.Args[0], &l.Args[1], &l.Args[2], &l.Args[3]
	e.Entry(dtypeEntry("where", o.DType))
	for i := 0; i < 4; i++ {
		e.SetArg(i, &l.Args[i])
	}
	n := o.Size()
	e.SetBytes(4, mslPack(&whereConsts{N: n, C: stridedOf(&c.Layout), A: stridedOf(&a.Layout), B: stridedOf(&b.Layout)}))
	e.DispatchThreads(Groups1DFor(n, e))
}

// encodeCopyRegion copies src into the region dst (same shape), casting.
func encodeCopyRegion(src, dst *Arg, e Encoder) {
	e.Entry("copy_" + src.DType.String() + "_" + dst.DType.String())
	e.SetArg(0, src)
	e.SetArg(1, dst)
	n := dst.Size()
	e.SetBytes(2, mslPack(&copyConsts{N: n, Src: stridedOf(&src.Layout), Dst: stridedOf(&dst.Layout)}))
	e.DispatchThreads(Groups1DFor(n, e))
}

func encodeCopy(l *Launch, e Encoder) { encodeCopyRegion(&l.Args[0], &l.Args[1], e) }

func encodeConcat(l *Launch, e Encoder) {
	p := l.Params.(*ConcatParams)
	o := l.Out()
	start := 0
	for i := 0; i < l.NArgs-1; i++ {
		in := &l.Args[i]
		dst := concatRegion(o, in, p.Axis, start)
		start += in.Shape[p.Axis]
		encodeCopyRegion(in, &dst, e)
	}
}

func encodeSliceUpdate(l *Launch, e Encoder) {
	p := l.Params.(*SliceUpdateParams)
	base, upd, o := &l.Args[0], &l.Args[1], &l.Args[2]
	if len(base.Data) == 0 || len(o.Data) == 0 || &base.Data[0] != &o.Data[0] || base.Offset != o.Offset {
		encodeCopyRegion(base, o, e)
	}
	dst := updateRegion(o, upd, p)
	encodeCopyRegion(upd, &dst, e)
}

func init() {
	for op, k := range binaryKernels {
		op := op
		k.Encode = func(l *Launch, e Encoder) { encodeBinary(op, l, e) }
	}
	for op, k := range unaryKernels {
		op := op
		k.Encode = func(l *Launch, e Encoder) { encodeUnary(op, l, e) }
	}
	KWhere.Encode = encodeWhere
	KCopy.Encode = encodeCopy
	KConcatenate.Encode = encodeConcat
	KSliceUpdate.Encode = encodeSliceUpdate
	RegisterSamples("binary", sampleBinary)
	RegisterSamples("unary", sampleUnary)
	RegisterSamples("where", sampleWhere)
	RegisterSamples("copy", sampleCopy)
	RegisterSamples("arange", sampleArange)
}

// launch assembles a sample launch from args (the output last).
func launch(k *Kernel, params any, args ...Arg) *Launch {
	l := &Launch{Kernel: k, Params: params, NArgs: len(args)}
	copy(l.Args[:], args)
	Poison(&l.Args[len(args)-1])
	return l
}

func randArg(rng *rand.Rand, l Layout, lo, hi float64) Arg {
	a := NewArg(l)
	Fill(rng, &a, lo, hi)
	return a
}

// transposed is a [r, c] view of a [c, r] buffer (non-contiguous strides).
func transposed(dt DType, r, c int) Layout {
	l := Contiguous(dt, r, c)
	l.Strides[0], l.Strides[1] = 1, r
	return l
}

func sampleBinary(rng *rand.Rand) []*Launch {
	var out []*Launch
	for _, op := range BinaryOps {
		for _, dt := range []DType{Float32, Int32, Float16, BFloat16} {
			lo, hi := -3.0, 3.0
			if op == OpDiv && dt == Int32 {
				lo, hi = 1, 9 // no division by zero
			}
			ol := Contiguous(Float32, 5, 7)
			ol.DType = dt
			if op.Cmp {
				ol.DType = Bool
			}
			a := randArg(rng, Contiguous(dt, 5, 7), lo, hi)
			b := randArg(rng, transposed(dt, 5, 7), lo, hi)
			out = append(out, launch(BinaryKernel(op), nil, a, b, NewArg(ol)))
			// Broadcast: a [5,1] column against b [1,7] row, as the graph hands them over.
			ac := randArg(rng, Contiguous(dt, 5, 1), lo, hi)
			br := randArg(rng, Contiguous(dt, 1, 7), lo, hi)
			ac.Layout = BroadcastLayout(&ac.Layout, &ol)
			br.Layout = BroadcastLayout(&br.Layout, &ol)
			out = append(out, launch(BinaryKernel(op), nil, ac, br, NewArg(ol)))
		}
	}
	return out
}

func sampleUnary(rng *rand.Rand) []*Launch {
	var out []*Launch
	for _, op := range UnaryOps {
		if op == OpNot {
			a := randArg(rng, Contiguous(Bool, 33), 0, 1)
			out = append(out, launch(UnaryKernel(op), nil, a, NewArg(Contiguous(Bool, 33))))
			continue
		}
		lo, hi := -2.0, 2.0
		if op == OpLog || op == OpSqrt || op == OpRsqrt {
			lo, hi = 0.1, 4
		}
		for _, dt := range []DType{Float32, Float16, BFloat16} {
			a := randArg(rng, transposed(dt, 6, 11), lo, hi)
			out = append(out, launch(UnaryKernel(op), nil, a, NewArg(Contiguous(dt, 6, 11))))
		}
	}
	return out
}

func sampleWhere(rng *rand.Rand) []*Launch {
	var out []*Launch
	for _, dt := range []DType{Float32, Int32, Bool, Float16, BFloat16} {
		ol := Contiguous(dt, 4, 9)
		c := randArg(rng, Contiguous(Bool, 4, 1), 0, 1)
		c.Layout = BroadcastLayout(&c.Layout, &ol)
		a := randArg(rng, Contiguous(dt, 4, 9), -1, 1)
		b := randArg(rng, transposed(dt, 4, 9), -1, 1)
		out = append(out, launch(KWhere, nil, c, a, b, NewArg(ol)))
	}
	return out
}

func sampleCopy(rng *rand.Rand) []*Launch {
	var out []*Launch
	all := []DType{Float32, Float16, BFloat16, Int32, Bool}
	var casts [][2]DType
	for _, from := range all {
		for _, to := range all {
			casts = append(casts, [2]DType{from, to})
		}
	}
	for _, c := range casts {
		src := randArg(rng, transposed(c[0], 7, 13), -50, 50)
		out = append(out, launch(KCopy, nil, src, NewArg(Contiguous(c[1], 7, 13))))
	}
	a := randArg(rng, Contiguous(Float32, 3, 4), -1, 1)
	b := randArg(rng, transposed(Float32, 3, 5), -1, 1)
	out = append(out, launch(KConcatenate, &ConcatParams{Axis: 1}, a, b, NewArg(Contiguous(Float32, 3, 9))))
	base := randArg(rng, Contiguous(Float32, 6, 8), -1, 1)
	upd := randArg(rng, Contiguous(Float32, 2, 3), -1, 1)
	p := &SliceUpdateParams{Offset: 1*8 + 4}
	p.Strides[0], p.Strides[1] = 8, 1
	out = append(out, launch(KSliceUpdate, p, base, upd, NewArg(Contiguous(Float32, 6, 8))))
	return out
}

func sampleArange(rng *rand.Rand) []*Launch {
	return []*Launch{
		launch(KArange, &ArangeParams{Start: -3, Step: 0.5}, NewArg(Contiguous(Float32, 37))),
		launch(KArange, &ArangeParams{Start: 2, Step: 3}, NewArg(Contiguous(Int32, 20))),
	}
}
