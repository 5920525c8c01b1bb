package kernels

// The half-weight linear: float16 and bfloat16 weights are read in their dtype and
// widened in registers, never converted as a whole matrix per call (a bfloat16
// checkpoint decoded at 0.3 tokens/s when every call widened its matrix in Go). The
// dot of an x row (widened, exactly) with a w row is computed in 16 lanes: lane l
// adds float32(x[k]*w[k]) for k = l, l+16, l+32, ... in order (each product rounded,
// no FMA), then the lanes fold by halves as qReduce16 folds them; the result is
// rounded to the output dtype once. mmDot16 is the definition; gemv16 (AVX-512) the
// fast path, four rows per pass; GEMM (many x rows) uses the same per-row dot on
// tiles of w, so a row's value does not depend on how many rows are computed.

// mmDot16 is the half-weight linear's dot product (x and w widened to float32).
func mmDot16(x, w []float32) float32 {
	w = w[:len(x)]
	var a [16]float32
	for k := range x {
		a[k%16] += float32(x[k] * w[k])
	}
	return qReduce16(&a)
}

// linear16TileBytes bounds the w rows one GEMM tile keeps in L2 while every x row
// passes over them.
const linear16TileBytes = 256 << 10

// linearHalf is linearCPU for float16 and bfloat16 (x, w and out of one dtype).
func linearHalf(l *Launch, p *MatmulParams) {
	x, w, o := &l.Args[0], &l.Args[1], &l.Args[2]
	xf := make([]float32, p.M*p.K)
	ofp := getScratchDirty(p.M * p.N)
	defer putScratch(ofp)
	of := *ofp
	for b := 0; b < p.Batch; b++ {
		mmWiden(xf, x, x.Offset+b*p.XStride)
		wo := w.Offset + b*p.WStride
		ws := U16(w.Data)[wo : wo+p.N*p.K]
		tile := p.N
		if p.M > 1 {
			tile = max(1, linear16TileBytes/(2*p.K))
		}
		for n0 := 0; n0 < p.N; n0 += tile {
			n1 := min(p.N, n0+tile)
			for i := 0; i < p.M; i++ {
				halfRows(w.DType, xf[i*p.K:(i+1)*p.K], ws[n0*p.K:n1*p.K], of[i*p.N+n0:i*p.N+n1], l.Helper)
			}
		}
		oo := o.Offset + b*p.M*p.N
		if o.DType == BFloat16 {
			os := U16(o.Data)[oo : oo+len(of)]
			for i, v := range of {
				os[i] = F32ToBF16(v)
			}
		} else {
			for i, v := range of {
				Store(o.DType, o.Data, oo+i, float64(v))
			}
		}
	}
}

// halfRowsSplit is the number of w bytes above which a product's rows are split
// between the worker and a helper (both cores read memory).
const halfRowsSplit = 1 << 20

// halfRows writes out[r] = mmDot16(x, row r of w) for the len(out) rows of the [., K]
// half matrix ws (dtype dt), with h taking half the rows of a large product.
func halfRows(dt DType, x []float32, ws []uint16, out []float32, h *Helper) {
	k, n := len(x), len(out)
	if n == 0 {
		return
	}
	if k == 0 {
		clear(out)
		return
	}
	ws = ws[:n*k]
	if !useAVX512 {
		wf := make([]float32, k)
		for r := range out {
			for i, v := range ws[r*k : (r+1)*k] {
				if dt == BFloat16 {
					wf[i] = BF16ToF32(v)
				} else {
					wf[i] = F16ToF32(v)
				}
			}
			out[r] = mmDot16(x, wf)
		}
		return
	}
	if h != nil && 2*n*k >= halfRowsSplit {
		half := n / 2
		if h.post(helpJob{fn: func() { gemv16(dt, x, ws[half*k:], out[half:]) }}) {
			gemv16(dt, x, ws[:half*k], out[:half])
			h.join()
			return
		}
	}
	gemv16(dt, x, ws, out)
}
