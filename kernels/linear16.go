package kernels

// The half-weight linear: float16 and bfloat16 weights are read in their dtype and
// widened in registers, never converted as a whole matrix per call (a bfloat16
// checkpoint decoded at 0.3 tokens/s when every call widened its matrix in Go). The
// dot of an x row (widened, exactly) with a w row is computed in 16 lanes: lane l
// takes a = fma(x[k], w[k], a) for k = l, l+16, l+32, ... in order (fused, rounded
// once: fma32), then the lanes fold by halves as qReduce16 folds them; the result is
// rounded to the output dtype once. mmDot16 is the definition; gemv16 (AVX-512) the
// fast path, a row at a time for one x row, four rows per pass for several; GEMM
// (many x rows) uses the same per-row dot on tiles of w, so a row's value does not
// depend on how many rows are computed.

// mmDot16 is the half-weight linear's dot product (x and w widened to float32).
func mmDot16(x, w []float32) float32 {
	w = w[:len(x)]
	var a [16]float32
	for k := range x {
		a[k%16] = fma32(x[k], w[k], a[k%16])
	}
	return qReduce16(&a)
}

// The half linear splits w into chunks of rows as the 16-lane qmv does (see
// qmv16ChunkBytes): chunks of linear16ChunkBytes for one x row, tiles of
// linear16TileBytes (kept in L2 while every x row passes) for several, shared with the
// Helper when w has linear16SplitBytes or more.
const (
	linear16ChunkBytes = 256 << 10
	linear16TileBytes  = 256 << 10
	linear16SplitBytes = 1 << 20
)

// linearHalf is linearCPU for float16 and bfloat16 (x, w and out of one dtype).
func linearHalf(l *Launch, p *MatmulParams) {
	x, w, o := &l.Args[0], &l.Args[1], &l.Args[2]
	xfp := getScratchDirty(p.M * p.K) // pooled: a prefill's fresh x would fault its pages in every call
	defer putScratch(xfp)
	xf := *xfp
	ofp := getScratchDirty(p.M * p.N)
	defer putScratch(ofp)
	of := *ofp
	step := linear16ChunkBytes
	if p.M > 1 {
		step = linear16TileBytes
	}
	step = max(1, step/(2*max(p.K, 1)))
	h := l.Helper
	if 2*p.N*p.K < linear16SplitBytes {
		h = nil
	}
	bfDot := p.BFDot && w.DType == BFloat16 && useBFDot(p.K)
	for b := 0; b < p.Batch; b++ {
		wo := w.Offset + b*p.WStride
		ws := U16(w.Data)[wo : wo+p.N*p.K]
		if !bfDot {
			mmWiden(xf, x, x.Offset+b*p.XStride)
		}
		if bfDot {
			xo := x.Offset + b*p.XStride
			halfRowsBFDot(U16(x.Data)[xo:xo+p.M*p.K], ws, p.M, p.N, p.K, of, l.Helper)
		} else if useGemm16(w.DType, p.M, p.N, p.K) {
			halfRowsMM(w.DType, xf, ws, p.M, p.N, p.K, of, l.Helper)
		} else {
			split := h.parallelRows
			if p.M == 1 {
				split = h.parallelStreams
			}
			split(p.N, step, func(r0, r1, _ int) {
				for i := 0; i < p.M; i++ {
					halfRows(w.DType, xf[i*p.K:(i+1)*p.K], ws[r0*p.K:r1*p.K], of[i*p.N+r0:i*p.N+r1], p.M == 1)
				}
			})
		}
		oo := o.Offset + b*p.M*p.N
		if o.DType == BFloat16 {
			narrowBF16(U16(o.Data)[oo:oo+len(of)], of)
		} else {
			for i, v := range of {
				Store(o.DType, o.Data, oo+i, float64(v))
			}
		}
	}
}

// halfRows writes out[r] = mmDot16(x, row r of w) for the len(out) rows of the [., K]
// half matrix ws (dtype dt): the AVX-512 rows, or the definition. stream says the rows
// are read once, from memory (one x row: a decode step), rather than from a tile in
// L2 that several x rows pass over: the assembly then takes them one at a time as a
// single prefetched stream (about 10% more DRAM bandwidth on two cores than four
// interleaved rows, BenchmarkRealGEMV), else four at a time (four independent chains,
// faster from cache). Both compute mmDot16 exactly.
func halfRows(dt DType, x []float32, ws []uint16, out []float32, stream bool) {
	k, n := len(x), len(out)
	if n == 0 {
		return
	}
	if k == 0 {
		clear(out)
		return
	}
	ws = ws[:n*k]
	if useAVX512 {
		gemv16(dt, x, ws, out, stream)
		return
	}
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
}
