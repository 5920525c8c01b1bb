package kernels

import "sync"

// Float casts and half-precision elementwise math on the CPU: a bfloat16 model's
// activations and a quantized model's bfloat16 norm and conv weights go through these
// every step, so they take typed loops (or float32 blocks) instead of Load and Store
// per element.

// halfViaF32 runs a float32 row function f over dense float arguments of which some are
// bfloat16 or float16 (a bfloat16 model's activations): blocks of each input widened
// to float32 (exact), f, then the block narrowed to o's dtype (rounded once to nearest
// even), as MLX and the Metal twins compute half-precision math in float. It takes
// only contiguous inputs of o's shape (no broadcast) and reports whether it ran. Large
// arguments split their blocks between the cores through h (nil: one core).
func halfViaF32(h *Helper, n int, ins []*Arg, o *Arg, f func(in [][]float32, out []float32)) bool {
	half := func(d DType) bool { return d == BFloat16 || d == Float16 }
	any16 := half(o.DType)
	for _, a := range ins {
		if (a.DType != Float32 && !half(a.DType)) || !a.IsContiguous() || !SameShape(&a.Layout, &o.Layout) {
			return false
		}
		any16 = any16 || half(a.DType)
	}
	if !any16 || (o.DType != Float32 && !half(o.DType)) || !o.IsContiguous() {
		return false
	}
	if len(ins) > len(halfBlocks{}.in) {
		return false
	}
	h.splitElemsAligned(n, func(c0, c1 int) {
		bl := halfPool.Get().(*halfBlocks)
		defer halfPool.Put(bl)
		in := bl.in[:len(ins)]
		for c := c0; c < c1; c += halfBlock {
			m := min(halfBlock, c1-c)
			for j, a := range ins {
				in[j] = bl.buf[j][:m]
				widenF32(in[j], a, a.Offset+c)
			}
			out := bl.buf[2][:m]
			f(in, out)
			narrowF32(o, o.Offset+c, out)
		}
	})
	return true
}

// halfBlock is halfViaF32's block: small enough for L1, large enough for the vector
// loops.
const halfBlock = 256

// halfBlocks is halfViaF32's scratch (pooled: a step runs these ops hundreds of
// times, and the closure it calls keeps the compiler from placing them on the stack).
type halfBlocks struct {
	buf [3][halfBlock]float32
	in  [2][]float32
}

var halfPool = sync.Pool{New: func() any { return new(halfBlocks) }}

// widenF32 writes len(dst) elements of a from element off on, as float32 (exact).
func widenF32(dst []float32, a *Arg, off int) {
	switch a.DType {
	case Float32:
		copy(dst, F32(a.Data)[off:off+len(dst)])
	case BFloat16:
		widenBF16(dst, U16(a.Data)[off:off+len(dst)])
	default:
		for i, h := range U16(a.Data)[off : off+len(dst)] {
			dst[i] = F16ToF32(h)
		}
	}
}

// narrowF32 writes src to o from element off on, rounded to o's dtype.
func narrowF32(o *Arg, off int, src []float32) {
	switch o.DType {
	case Float32:
		copy(F32(o.Data)[off:off+len(src)], src)
	case BFloat16:
		narrowBF16(U16(o.Data)[off:off+len(src)], src)
	default:
		ov := U16(o.Data)[off : off+len(src)]
		for i, v := range src {
			ov[i] = F32ToF16(v)
		}
	}
}

// whereRow is where's row loop over elements of one size, copied as bits. A row whose
// condition and output are dense and whose operands are each dense or one value (a
// mask against a fill, the common case) takes a loop over slices.
func whereRow[E uint16 | uint32](cv []byte, av, bv, ov []E) func(n int, off, inc [4]int) {
	return func(n int, off, inc [4]int) {
		ic, ia, ib, io := off[0], off[1], off[2], off[3]
		if inc[0] == 1 && inc[3] == 1 && inc[1]|inc[2] <= 1 && inc[1] >= 0 && inc[2] >= 0 {
			c, o := cv[ic:ic+n], ov[io:io+n]
			switch {
			case inc[1] == 1 && inc[2] == 0:
				a, b := av[ia:ia+n], bv[ib]
				for i := range o {
					if c[i] != 0 {
						o[i] = a[i]
					} else {
						o[i] = b
					}
				}
				return
			case inc[1] == 0 && inc[2] == 1:
				a, b := av[ia], bv[ib:ib+n]
				for i := range o {
					if c[i] != 0 {
						o[i] = a
					} else {
						o[i] = b[i]
					}
				}
				return
			}
		}
		for i := 0; i < n; i++ {
			if cv[ic] != 0 {
				ov[io] = av[ia]
			} else {
				ov[io] = bv[ib]
			}
			ic += inc[0]
			ia += inc[1]
			ib += inc[2]
			io += inc[3]
		}
	}
}

// castsDense reports whether castDense converts a's dtype to o's: float32 and
// bfloat16, either way, in one vector pass over the slices.
func castsDense(a, o *Arg) bool {
	return (a.DType == BFloat16 && o.DType == Float32) || (a.DType == Float32 && o.DType == BFloat16)
}

// castDense converts elements [i0, i1) of dense a into dense o (castsDense true).
func castDense(a, o *Arg, i0, i1 int) {
	if a.DType == BFloat16 {
		widenBF16(F32(o.Data)[o.Offset+i0:o.Offset+i1], U16(a.Data)[a.Offset+i0:a.Offset+i1])
		return
	}
	narrowBF16(U16(o.Data)[o.Offset+i0:o.Offset+i1], F32(a.Data)[a.Offset+i0:a.Offset+i1])
}

// castRow returns a row loop converting between float32, bfloat16 and float16 (a
// quantized model's norm and conv weights, widened every step), or nil for other
// dtypes. It converts as Load then Store would: widening is exact, and narrowing a
// float32 rounds once to nearest even.
func castRow(a, o *Arg) func(n int, off, inc [4]int) {
	widen := func(d DType, b []byte) func(i int) float32 {
		switch d {
		case Float32:
			v := F32(b)
			return func(i int) float32 { return v[i] }
		case BFloat16:
			v := U16(b)
			return func(i int) float32 { return BF16ToF32(v[i]) }
		case Float16:
			v := U16(b)
			return func(i int) float32 { return F16ToF32(v[i]) }
		}
		return nil
	}
	if widen(a.DType, a.Data) == nil || widen(o.DType, o.Data) == nil {
		return nil
	}
	if o.DType == Float32 && a.DType == BFloat16 { // the common case, without calls
		av, ov := U16(a.Data), F32(o.Data)
		return func(n int, off, inc [4]int) {
			ia, io := off[0], off[1]
			for i := 0; i < n; i++ {
				ov[io] = BF16ToF32(av[ia])
				ia += inc[0]
				io += inc[1]
			}
		}
	}
	get := widen(a.DType, a.Data)
	switch o.DType {
	case Float32:
		ov := F32(o.Data)
		return func(n int, off, inc [4]int) {
			ia, io := off[0], off[1]
			for i := 0; i < n; i++ {
				ov[io] = get(ia)
				ia += inc[0]
				io += inc[1]
			}
		}
	default:
		narrow := F32ToBF16
		if o.DType == Float16 {
			narrow = F32ToF16
		}
		ov := U16(o.Data)
		return func(n int, off, inc [4]int) {
			ia, io := off[0], off[1]
			for i := 0; i < n; i++ {
				ov[io] = narrow(get(ia))
				ia += inc[0]
				io += inc[1]
			}
		}
	}
}
