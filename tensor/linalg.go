package tensor

import (
	"github.com/ingotml/ingot/kernels"
	"slices"
)

// Matrix products. All of them run the "linear" form of the kernels (each output is the
// dot of two contiguous rows), so Linear, Matmul and GatherMM agree bit for bit on the
// same rows, and a row's result does not depend on how many rows share the call.

// matmulDType is the common float dtype of a product's operands; integer operands are a
// programming error (as in MLX).
func matmulDType(op string, a, b Array) DType {
	dt := promote(a.DType(), b.DType())
	if !dt.IsFloat() {
		shapePanic(op, "want floating-point operands, got %s and %s", a.DType(), b.DType())
	}
	return dt
}

// linalgSize is the product of dims.
func linalgSize(dims []int) int {
	n := 1
	for _, d := range dims {
		n *= d
	}
	return n
}

// Linear returns x @ w^T for x [..., K] and w [N, K] (weights as stored by HF): [..., N].
// x and w are copied first only if they are not dense row-major. On a graph made with
// Options.FastPrompts, a bfloat16 prompt product (x [..., L, K] with L >= 2 tokens a
// sequence) asks for the pair-dot path (kernels.MatmulParams.BFDot).
func Linear(x, w Array) Array {
	same("linear", x, w)
	if x.NDim() < 1 || w.NDim() != 2 || x.Dim(-1) != w.Dim(1) {
		shapePanic("linear", "cannot multiply %v by the transpose of %v", x.Shape(), w.Shape())
	}
	dt := matmulDType("linear", x, w)
	x, w = Contiguous(x.AsType(dt)), Contiguous(w.AsType(dt))
	k, n := w.Dim(1), w.Dim(0)
	shape := x.Shape()
	p := &kernels.MatmulParams{Batch: 1, M: linalgSize(shape[:len(shape)-1]), N: n, K: k,
		BFDot: dt == BFloat16 && promptRows(x)}
	shape[len(shape)-1] = n
	return Array{x.Graph().Apply(kernels.KLinear, p, dt, shape, x.h, w.h)}
}

// Matmul returns a @ b for a [..., M, K], b [..., K, N] (leading dims broadcast or equal):
// [..., M, N]. A 1-D a is a row [K] and a 1-D b a column [K]; their axis is dropped from
// the result, as numpy does. b is copied transposed to [..., N, K] (free when b is itself
// a transposed view of a dense array); an operand whose batch dims broadcast is shared
// across the batch without a copy when its batch size is 1.
func Matmul(a, b Array) Array {
	same("matmul", a, b)
	if a.NDim() < 1 || b.NDim() < 1 {
		shapePanic("matmul", "cannot multiply %v by %v", a.Shape(), b.Shape())
	}
	dt := matmulDType("matmul", a, b)
	a, b = a.AsType(dt), b.AsType(dt)
	rowA, colB := a.NDim() == 1, b.NDim() == 1
	if rowA {
		a = ExpandDims(a, 0)
	}
	if colB {
		b = ExpandDims(b, 1)
	}
	as, bs := a.Shape(), b.Shape()
	m, k := as[len(as)-2], as[len(as)-1]
	n := bs[len(bs)-1]
	if bs[len(bs)-2] != k {
		shapePanic("matmul", "cannot multiply %v by %v", as, bs)
	}
	batch := BroadcastShapes("matmul", as[:len(as)-2], bs[:len(bs)-2])
	if len(batch)+2 > kernels.MaxDims {
		shapePanic("matmul", "rank %d exceeds %d", len(batch)+2, kernels.MaxDims)
	}
	p := &kernels.MatmulParams{Batch: linalgSize(batch), M: m, N: n, K: k}
	var xStride, wStride int
	a, xStride = matmulOperand(a, batch, m, k)
	b, wStride = matmulOperand(SwapAxes(b, -1, -2), batch, n, k)
	p.XStride, p.WStride = xStride, wStride

	shape := append(append([]int(nil), batch...), m, n)
	out := Array{a.Graph().Apply(kernels.KLinear, p, dt, shape, a.h, b.h)}
	if rowA {
		out = Squeeze(out, -2)
	}
	if colB {
		out = Squeeze(out, -1)
	}
	return out
}

// matmulOperand makes x [..., r, k] dense for a product over the batch dims batch, and
// returns its batch stride: 0 when one matrix serves every batch, r*k when x has one
// per batch (broadcast batch dims other than a single matrix are materialised).
func matmulOperand(x Array, batch []int, r, k int) (Array, int) {
	xs := x.Shape()
	own := xs[:len(xs)-2]
	if linalgSize(own) == 1 {
		return Reshape(x, r, k), 0
	}
	if len(own) != len(batch) || linalgSize(own) != linalgSize(batch) {
		x = BroadcastTo(x, append(append([]int(nil), batch...), r, k)...)
	}
	return Contiguous(x), r * k
}

// GatherMM returns the MoE expert products (SwitchGLU's gather_mm): x [T, K], w [E, O, K]
// (stacked expert weights as stored), idx [T, k] int32 -> out [T, k, O] with
// out[t,j,:] = w[idx[t,j]] @ x[t]. More generally x [..., K] and idx [..., k] with equal
// leading dims give [..., k, O]. An expert index e selects e when 0 <= e < E and e+E when
// -E <= e < 0; any other index fails the evaluation with a *kernels.LaunchError, on the
// CPU and on Metal (indices are computed data: no panic here).
func GatherMM(x, w, idx Array) Array {
	same("gather_mm", x, w)
	same("gather_mm", x, idx)
	xs, is := x.Shape(), idx.Shape()
	if x.NDim() < 1 || w.NDim() != 3 || idx.NDim() != x.NDim() || w.Dim(2) != x.Dim(-1) {
		shapePanic("gather_mm", "x %v, w %v, idx %v: want x [..., K], w [E, O, K], idx [..., k]", xs, w.Shape(), is)
	}
	for i := 0; i < len(xs)-1; i++ {
		if xs[i] != is[i] {
			shapePanic("gather_mm", "x %v and idx %v differ in leading dims", xs, is)
		}
	}
	if len(xs)+1 > kernels.MaxDims {
		shapePanic("gather_mm", "rank %d exceeds %d", len(xs)+1, kernels.MaxDims)
	}
	dt := matmulDType("gather_mm", x, w)
	idx = indexArray("gather_mm", idx)
	x, w = Contiguous(x.AsType(dt)), Contiguous(w.AsType(dt))
	e, o, k := w.Dim(0), w.Dim(1), w.Dim(2)
	topk := is[len(is)-1]
	p := &kernels.GatherMMParams{Rows: linalgSize(xs[:len(xs)-1]), TopK: topk, Experts: e, O: o, K: k}
	shape := append(append([]int(nil), xs[:len(xs)-1]...), topk, o)
	return Array{x.Graph().Apply(kernels.KGatherMM, p, dt, shape, x.h, w.h, idx.h)}
}

// SwitchGLU is the fused MoE expert block: for each row of x [..., H] and its k routed
// experts idx [..., k] (int32) with weights scores [..., k],
// y = sum_j scores_j * down[e_j] @ (silu(gate[e_j] @ x) * (up[e_j] @ x)), with gate and up
// [E, I, H] and down [E, H, I] as stored. One node instead of the dozen that
// GatherMM, Silu, Mul, GatherMM, Mul and Sum take; the same float32 arithmetic.
func SwitchGLU(x, gate, up, down, idx, scores Array) Array {
	const op = "switch_glu"
	same(op, x, gate)
	same(op, x, up)
	same(op, x, down)
	same(op, x, idx)
	same(op, x, scores)
	xs := x.Shape()
	h := xs[len(xs)-1]
	if gate.NDim() != 3 || up.NDim() != 3 || down.NDim() != 3 || gate.Dim(2) != h ||
		!slices.Equal(gate.Shape(), up.Shape()) || down.Dim(0) != gate.Dim(0) || down.Dim(1) != h || down.Dim(2) != gate.Dim(1) {
		shapePanic(op, "x %v, gate %v, up %v, down %v: want gate and up [E, I, H], down [E, H, I]",
			xs, gate.Shape(), up.Shape(), down.Shape())
	}
	is := idx.Shape()
	if len(is) != len(xs) || !slices.Equal(is, scores.Shape()) || !slices.Equal(is[:len(is)-1], xs[:len(xs)-1]) {
		shapePanic(op, "x %v, idx %v, scores %v: want idx and scores [..., k] over x's rows", xs, is, scores.Shape())
	}
	g := x.Graph()
	rows := linalgSize(xs[:len(xs)-1])
	k := is[len(is)-1]
	f := func(a Array) Array { return Contiguous(a.AsType(Float32)) }
	// The kernel reads dense rows, so the leading dims need no reshape views.
	xf, sc := f(x), f(scores)
	ix := Contiguous(indexArray(op, idx).AsType(Int32))
	p := &kernels.SwitchGLUParams{T: rows, H: h, K: k, E: gate.Dim(0), I: gate.Dim(1)}
	return Array{g.Apply(kernels.KSwitchGLU, p, Float32, xs, xf.h, f(gate).h, f(up).h, f(down).h, ix.h, sc.h)}
}
