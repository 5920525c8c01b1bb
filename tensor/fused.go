package tensor

import (
	"math"
	"slices"

	"github.com/ingotml/ingot/kernels"
)

// Per-layer fused ops: a whole block of a decoder layer in one node. They take float32
// only (the model falls back to the op-by-op path for other dtypes) and compute exactly
// what the ops they replace compute, in the same order, so results agree within float32
// noise.

// MoEWeights are the weights of a sparse-MoE block with a gated shared expert.
type MoEWeights struct {
	Norm             Array // [H]: the RMSNorm in front of the block
	Router           Array // [E, H]
	Gate, Up         Array // [E, I, H]
	Down             Array // [E, H, I]
	SharedGate       Array // [Is, H]
	SharedUp         Array // [Is, H]
	SharedDown       Array // [H, Is]
	SharedExpertGate Array // [1, H]
}

// MoEBlockFits reports whether MoEBlock takes a block of these sizes (hidden h, e
// experts of width i, top-k, shared expert width is).
func MoEBlockFits(h, e, k, i, is int) bool { return kernels.MoEBlockFits(h, e, k, i, is) }

// MoEBlock is x1 + moe(rms_norm(x1, w.Norm, eps)) with x1 = x + r, for x and r [..., H]
// float32: the residual add, the post-mixer norm and the sparse-MoE block (softmax
// router, top-k, renormalised when renorm, SwiGLU experts, the shared expert scaled by
// sigmoid(SharedExpertGate . h)) in one node (kernels.KMoEBlock).
func MoEBlock(x, r Array, w *MoEWeights, eps float64, k int, renorm bool) Array {
	const op = "moe_block"
	ws := []Array{w.Norm, w.Router, w.Gate, w.Up, w.Down, w.SharedGate, w.SharedUp, w.SharedDown, w.SharedExpertGate}
	for _, a := range append([]Array{r}, ws...) {
		same(op, x, a)
	}
	for _, a := range append([]Array{x, r}, ws...) {
		if a.DType() != Float32 {
			shapePanic(op, "takes float32 only, got %v", a.DType())
		}
	}
	xs := x.Shape()
	if len(xs) == 0 || !slices.Equal(xs, r.Shape()) {
		shapePanic(op, "x %v and r %v must have one shape [..., H]", xs, r.Shape())
	}
	h := xs[len(xs)-1]
	e, i, is := w.Router.Dim(0), w.Gate.Dim(1), w.SharedGate.Dim(0)
	want := [][]int{{h}, {e, h}, {e, i, h}, {e, i, h}, {e, h, i}, {is, h}, {is, h}, {h, is}, {1, h}}
	for j, a := range ws {
		if !slices.Equal(a.Shape(), want[j]) {
			shapePanic(op, "weight %d has shape %v, want %v (H %d, E %d, I %d, Is %d)", j, a.Shape(), want[j], h, e, i, is)
		}
	}
	if !MoEBlockFits(h, e, k, i, is) {
		shapePanic(op, "sizes H %d, E %d, k %d, I %d, Is %d exceed the kernel's limits", h, e, k, i, is)
	}
	if !(eps >= 0) || math.IsInf(eps, 0) {
		shapePanic(op, "eps %v must be finite and >= 0", eps)
	}
	p := &kernels.MoEBlockParams{T: linalgSize(xs[:len(xs)-1]), H: h, E: e, K: k, I: i, Is: is, Renorm: renorm, Eps: eps}
	args := []Array{x, r}
	args = append(args, ws...)
	for j, a := range args {
		args[j] = Contiguous(a)
	}
	return Array{x.Graph().Apply(kernels.KMoEBlock, p, Float32, xs, handles(args)...)}
}
