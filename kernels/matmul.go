package kernels

import (
	"fmt"
	"math/rand"
)

// The matmul family: products of row-major matrices in the "linear" form x @ w^T, where
// every output element is the dot product of two contiguous rows (an x row and a w row,
// as Hugging Face stores weights [out, in]). Matmul of a @ b is brought to this form by
// the tensor op, which copies b transposed.
//
// Every dot product of the Go twin, on every path, uses the same arithmetic: float32
// accumulation in four interleaved lanes (lane j takes k = j mod 4), the tail k >= K&^3
// added to lane 0, then (lane0 + lane1) + (lane2 + lane3). So a row gives bit-identical
// results whether it is computed alone (decode) or among many rows (prefill). The MSL
// twin spreads a row over a threadgroup (matmul.metal) and adds the same products in
// another order, within the catalog's tolerance, the same for any row count.

// MatmulParams is the parameter struct of KLinear: Batch independent products
// out[b] = x[b] @ w[b]^T, with x[b] an [M, K] and w[b] an [N, K] dense row-major matrix
// starting XStride*b (WStride*b) elements after the argument's offset; a stride of 0
// uses one matrix for every batch (broadcast). The output is [Batch, M, N] contiguous
// (any shape with that many elements).
type MatmulParams struct {
	Batch   int `msl:"batch"`
	M       int `msl:"m"`
	N       int `msl:"n"`
	K       int `msl:"k"`
	XStride int `msl:"x_stride"`
	WStride int `msl:"w_stride"`
	// BFDot asks for the bfloat16 pair-dot prompt path (bf16dot.go) where the CPU has
	// it and x and w are bfloat16. The Metal twin ignores it.
	BFDot bool `msl:"bf_dot"`
}

// KLinear computes out = x @ w^T. Args x, w, out (one float dtype for all three). Both
// inputs must be dense row-major from their offsets (the tensor ops copy views first).
// The Go twin takes a GEMV path for one to three rows (decode) and a cache-blocked GEMM
// path for more (prefill); both compute each dot as described above.
var KLinear = Register(&Kernel{Name: "linear", Family: "matmul", CPU: linearCPU, Encode: linearEncode})

// mmLinearMinGEMM is the smallest row count that takes the blocked GEMM path.
const mmLinearMinGEMM = 4

// mmTileFloats bounds the w rows one GEMM tile keeps hot in L1 (32 KiB of float32).
const mmTileFloats = 8192

func linearCPU(l *Launch) {
	p := l.Params.(*MatmulParams)
	x, w, o := &l.Args[0], &l.Args[1], &l.Args[2]
	mmCheckDense("linear", x, w)
	if p.Batch*p.M*p.N == 0 {
		return
	}
	if x.DType == Float32 && w.DType == Float32 && o.DType == Float32 {
		xs, ws, os := F32(x.Data), F32(w.Data), F32(o.Data)
		for b := 0; b < p.Batch; b++ {
			xo, wo := x.Offset+b*p.XStride, w.Offset+b*p.WStride
			oo := o.Offset + b*p.M*p.N
			mmLinearF32(xs[xo:xo+p.M*p.K], ws[wo:wo+p.N*p.K], os[oo:oo+p.M*p.N], p.M, p.N, p.K)
		}
		return
	}
	if (w.DType == Float16 || w.DType == BFloat16) && x.DType == w.DType && o.DType == w.DType {
		linearHalf(l, p) // the 16-lane order of linear16.go
		return
	}
	// Mixed dtypes: widen to float32 (exact), run the float32 arithmetic, round once
	// on store.
	xf := make([]float32, p.M*p.K)
	wf := make([]float32, p.N*p.K)
	of := make([]float32, p.M*p.N)
	for b := 0; b < p.Batch; b++ {
		mmWiden(xf, x, x.Offset+b*p.XStride)
		mmWiden(wf, w, w.Offset+b*p.WStride)
		mmLinearF32(xf, wf, of, p.M, p.N, p.K)
		oo := o.Offset + b*p.M*p.N
		for i, v := range of {
			Store(o.DType, o.Data, oo+i, float64(v))
		}
	}
}

// mmCheckDense rejects views a kernel that indexes rows directly cannot read: the
// tensor ops never pass them, so this is a bug in a caller (the device reports it).
func mmCheckDense(op string, args ...*Arg) {
	for i, a := range args {
		if !a.IsContiguous() {
			panic(fmt.Sprintf("kernels: %s: argument %d is not dense (shape %v, strides %v)",
				op, i, a.Dims(), a.Strides[:a.NDim]))
		}
	}
}

// mmWiden loads len(dst) elements of a starting at element off as float32.
func mmWiden(dst []float32, a *Arg, off int) {
	if a.DType == BFloat16 {
		widenBF16(dst, U16(a.Data)[off:off+len(dst)])
		return
	}
	for i := range dst {
		dst[i] = float32(Load(a.DType, a.Data, off+i))
	}
}

// mmLinearF32 writes out[i*n+j] = dot(x row i, w row j) for x [m, k], w [n, k].
func mmLinearF32(x, w, out []float32, m, n, k int) {
	if m < mmLinearMinGEMM || k == 0 {
		// GEMV: one pass over w per x row.
		for i := 0; i < m; i++ {
			gemvF32(x[i*k:i*k+k], w, k, out[i*n:i*n+n])
		}
		return
	}
	// GEMM: a tile of w rows stays in L1 while every x row passes over it, so w streams
	// from memory once per tile instead of once per x row.
	tile := max(1, mmTileFloats/k)
	for j0 := 0; j0 < n; j0 += tile {
		j1 := min(n, j0+tile)
		wt := w[j0*k : j1*k]
		for i := 0; i < m; i++ {
			gemvF32(x[i*k:i*k+k], wt, k, out[i*n+j0:i*n+j1])
		}
	}
}

// mmDot is the dot product of two equal-length rows in the family's fixed order.
func mmDot(x, w []float32) float32 {
	w = w[:len(x)]
	var s0, s1, s2, s3 float32
	k := 0
	for ; k+4 <= len(x); k += 4 {
		xs, ws := x[k:k+4:k+4], w[k:k+4:k+4]
		// float32(...) rounds each product: the spec then forbids fusing it into an FMA
		// (GOAMD64=v3 would otherwise), so the order above is exact on every build.
		s0 += float32(xs[0] * ws[0])
		s1 += float32(xs[1] * ws[1])
		s2 += float32(xs[2] * ws[2])
		s3 += float32(xs[3] * ws[3])
	}
	for ; k < len(x); k++ {
		s0 += float32(x[k] * w[k])
	}
	return (s0 + s1) + (s2 + s3)
}

// mmEntry is the MSL entry of a matmul-family kernel for dtype dt (float32 and float16
// have MSL twins; bfloat16 runs on the Go twin only, so its entry does not exist).
func mmEntry(base string, dt DType) string { return base + "_" + dt.String() }

// linRows and linThreads are matmul.metal's LIN_ROWS and LIN_THREADS.
const (
	linRows    = 4
	linThreads = 256
)

// The tiled product (gemm.metal), taken by linear from gemmMinRows x rows and by qmm from
// qmmGemmMinRows: a threadgroup of gemmThreads threads (16 x 16) computes a tile of out,
// each thread t x t of it, t = 4 (64 x 64 tiles, the gemm4 entries) or 8 (128 x 128, the
// gemm8 entries). On the H200 translation at 512 rows (docs/h200/run17-*): 8 x 8 is
// faster where its tiles fill the GPU (1024 -> 3584: 135 us against 183 for 4 x 4, 112
// tiles), 4 x 4 where they would not (3584 -> 1024: 197 us against 451 for 8 x 8's 32
// tiles); so 8 x 8 from gemmBigMinTiles tiles. Fewer rows keep linear's decode entry,
// which reads w once a row but spreads each row over a threadgroup (1024 -> 3584: equal
// at 16 rows, 59 us; linear 33 us against 60 at 8 rows, 112 against 59 at 32); qmm's
// one-thread-an-output entry is slower than the tile from 4 rows (126 us against 60).
const (
	gemmThreads     = 256 // GEMM_THREADS
	gemmMinRows     = 16
	qmmGemmMinRows  = 4
	gemmBigMinTiles = 96
)

// gemmTile is the thread tile (4 or 8) of a tiled launch for out [batch, m, n].
func gemmTile(m, n, batch int) int {
	if (m+127)/128*((n+127)/128)*batch >= gemmBigMinTiles {
		return 8
	}
	return 4
}

// gemmEntry selects a tiled entry and reports whether its pipeline takes gemmThreads
// threads a threadgroup (the kernel's thread layout needs all of them; Metal's
// maxTotalThreadsPerThreadgroup may be lower for a kernel of many registers): if not,
// the caller selects its decode entry instead.
func gemmEntry(e Encoder, name string) bool {
	e.Entry(name)
	if tl, ok := e.(ThreadLimiter); ok && tl.MaxThreads() < gemmThreads {
		return false
	}
	return true
}

// gemmDispatch dispatches a tiled entry of thread tile t for out [batch, m, n]: x =
// column tiles, y = row tiles, z = batch.
func gemmDispatch(e Encoder, t, m, n, batch int) {
	b := 16 * t
	e.DispatchThreadgroups([3]int{max((n+b-1)/b, 1), max((m+b-1)/b, 1), max(batch, 1)}, [3]int{gemmThreads, 1, 1})
}

func linearEncode(l *Launch, e Encoder) {
	p := l.Params.(*MatmulParams)
	bind := func() {
		for i := 0; i < 3; i++ {
			e.SetArg(i, &l.Args[i])
		}
		e.SetBytes(3, mslPack(p))
	}
	t := gemmTile(p.M, p.N, p.Batch)
	if p.M >= gemmMinRows && gemmEntry(e, mmEntry(fmt.Sprintf("gemm%d", t), l.Out().DType)) {
		bind()
		gemmDispatch(e, t, p.M, p.N, p.Batch)
		return
	}
	e.Entry(mmEntry("linear", l.Out().DType))
	bind()
	// linRows outputs per threadgroup of linThreads (fewer where the pipeline allows
	// fewer; the MSL takes any multiple of 32), which split K (see matmul.metal):
	// x = w rows, y = x row, z = batch.
	e.DispatchThreadgroups([3]int{max((p.N+linRows-1)/linRows, 1), max(p.M, 1), max(p.Batch, 1)},
		ClampGroup(linThreads, e))
}

func init() { RegisterSamples("matmul", matmulSamples) }

// matmulSamples covers GEMV and GEMM row counts, K with and without a tail, batches with
// both strides and a broadcast weight, an input offset, and float16.
func matmulSamples(rng *rand.Rand) []*Launch {
	type shape struct {
		dt                     DType
		batch, m, n, k, xOff   int
		xBroadcast, wBroadcast bool
	}
	shapes := []shape{
		{Float32, 1, 1, 7, 13, 0, false, false},
		{Float32, 1, 1, 192, 64, 5, false, false},
		{Float32, 1, 6, 9, 37, 0, false, false},
		{Float32, 3, 5, 4, 8, 2, false, true},
		{Float32, 2, 3, 5, 3, 0, true, false},
		{Float16, 2, 2, 5, 11, 1, false, false},
		{Float32, 1, 2, 9, 601, 3, false, false}, // K over the MSL twin's 256 threads, a partial last group
		// The tiled entries (gemmMinRows rows or more): partial row and column tiles, K
		// past a step with a tail, batches with a broadcast operand, float16.
		{Float32, 1, 70, 130, 37, 3, false, false},
		{Float32, 2, 20, 9, 64, 0, false, true},
		{Float16, 2, 17, 66, 40, 1, true, false},
		{Float32, 96, 100, 120, 20, 0, false, false}, // gemmBigMinTiles tiles: the 8 x 8 entry
	}
	var out []*Launch
	for _, s := range shapes {
		p := &MatmulParams{Batch: s.batch, M: s.m, N: s.n, K: s.k, XStride: s.m * s.k, WStride: s.n * s.k}
		xb, wb := s.batch, s.batch
		if s.xBroadcast {
			xb, p.XStride = 1, 0
		}
		if s.wBroadcast {
			wb, p.WStride = 1, 0
		}
		l := &Launch{Kernel: KLinear, Params: p, NArgs: 3}
		xl := Contiguous(s.dt, xb, s.m, s.k)
		xl.Offset = s.xOff
		l.Args[0] = NewArg(xl)
		l.Args[1] = NewArg(Contiguous(s.dt, wb, s.n, s.k))
		l.Args[2] = NewArg(Contiguous(s.dt, s.batch, s.m, s.n))
		Fill(rng, &l.Args[0], -1, 1)
		Fill(rng, &l.Args[1], -1, 1)
		Poison(&l.Args[2])
		out = append(out, l)
	}
	return out
}
