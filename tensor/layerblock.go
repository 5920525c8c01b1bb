package tensor

import (
	"fmt"
	"math"
	"slices"

	"github.com/ingotml/ingot/graph"
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

// MoEBlockFits reports whether g's device takes MoEBlock at these sizes (hidden h, e
// experts of width i, top-k, shared expert width is; see graph.TakesFused).
func MoEBlockFits(g *graph.Graph, h, e, k, i, is int) bool {
	return graph.TakesFused(g.Device(), kernels.KMoEBlock, &kernels.MoEBlockParams{T: 1, H: h, E: e, K: k, I: i, Is: is})
}

// MoEBlock is x1 + moe(rms_norm(x1, w.Norm, eps)) with x1 = x + r, for x and r [..., H]
// float32: the residual add, the post-mixer norm and the sparse-MoE block (softmax
// router, top-k, renormalised when renorm, SwiGLU experts, the shared expert scaled by
// sigmoid(SharedExpertGate . h)) in one node (kernels.KMoEBlock).
func MoEBlock(x, r Array, w *MoEWeights, eps float64, k int, renorm bool) Array {
	if !x.Valid() || !r.Valid() || !slices.Equal(x.Shape(), r.Shape()) || x.NDim() == 0 {
		shapePanic("moe_block", "x %v and r %v must have one shape [..., H]", x.Shape(), r.Shape())
	}
	return moeBlock(x, r, w, eps, k, renorm)
}

// MoEBlockAfter is MoEBlock with r the output of a GDN decode step, x its input [B, 1,
// H]: the kernel reads r in place from st.Out (its first B*H elements), without the
// view node st.R() would cost.
func MoEBlockAfter(x Array, st *GDNStep, w *MoEWeights, eps float64, k int, renorm bool) Array {
	if !x.Valid() || !slices.Equal(x.Shape(), []int{st.b, 1, st.h}) {
		shapePanic("moe_block", "x %v is not the GDN step's input [%d 1 %d]", x.Shape(), st.b, st.h)
	}
	return moeBlock(x, st.Out, w, eps, k, renorm)
}

// moeBlock builds the node; r is shaped like x, or 1-D starting with x's size of r.
func moeBlock(x, r Array, w *MoEWeights, eps float64, k int, renorm bool) Array {
	const op = "moe_block"
	ws := []Array{w.Norm, w.Router, w.Gate, w.Up, w.Down, w.SharedGate, w.SharedUp, w.SharedDown, w.SharedExpertGate}
	checkBlockInputs(op, x, r, ws)
	xs := x.Shape()
	h := xs[len(xs)-1]
	e, i, is := w.Router.Dim(0), w.Gate.Dim(1), w.SharedGate.Dim(0)
	want := [][]int{{h}, {e, h}, {e, i, h}, {e, i, h}, {e, h, i}, {is, h}, {is, h}, {h, is}, {1, h}}
	for j, a := range ws {
		if !slices.Equal(a.Shape(), want[j]) {
			shapePanic(op, "weight %d has shape %v, want %v (H %d, E %d, I %d, Is %d)", j, a.Shape(), want[j], h, e, i, is)
		}
	}
	p := &kernels.MoEBlockParams{T: linalgSize(xs[:len(xs)-1]), H: h, E: e, K: k, I: i, Is: is, Renorm: renorm, Eps: eps}
	checkTaken(op, x.Graph(), kernels.KMoEBlock, p, "H %d, E %d, k %d, I %d, Is %d", h, e, k, i, is)
	if !(eps >= 0) || math.IsInf(eps, 0) {
		shapePanic(op, "eps %v must be finite and >= 0", eps)
	}
	args := []Array{x, r}
	args = append(args, ws...)
	for j, a := range args {
		args[j] = Contiguous(a)
	}
	return Array{x.Graph().Apply(kernels.KMoEBlock, p, Float32, xs, handles(args)...)}
}

// MLPWeights are the weights of a dense SwiGLU MLP block and the norm in front of it.
type MLPWeights struct {
	Norm     Array // [H]
	Gate, Up Array // [I, H]
	Down     Array // [H, I]
}

// MLPBlockFits reports whether g's device takes MLPBlock at hidden size h and MLP width
// i (see graph.TakesFused).
func MLPBlockFits(g *graph.Graph, h, i int) bool {
	return graph.TakesFused(g.Device(), kernels.KMLPBlock, &kernels.MLPBlockParams{T: 1, H: h, I: i})
}

// MLPBlock is x1 + down @ (silu(gate @ h) * (up @ h)) with x1 = x + r and
// h = rms_norm(x1, w.Norm, eps), for x and r [..., H] float32: a dense layer's residual
// add, post-mixer norm and MLP in one node (kernels.KMLPBlock).
func MLPBlock(x, r Array, w *MLPWeights, eps float64) Array {
	if !x.Valid() || !r.Valid() || !slices.Equal(x.Shape(), r.Shape()) || x.NDim() == 0 {
		shapePanic("mlp_block", "x %v and r %v must have one shape [..., H]", x.Shape(), r.Shape())
	}
	return mlpBlock(x, r, w, eps)
}

// MLPBlockAfter is MLPBlock with r read in place from a GDN decode step of input x
// (see MoEBlockAfter).
func MLPBlockAfter(x Array, st *GDNStep, w *MLPWeights, eps float64) Array {
	if !x.Valid() || !slices.Equal(x.Shape(), []int{st.b, 1, st.h}) {
		shapePanic("mlp_block", "x %v is not the GDN step's input [%d 1 %d]", x.Shape(), st.b, st.h)
	}
	return mlpBlock(x, st.Out, w, eps)
}

func mlpBlock(x, r Array, w *MLPWeights, eps float64) Array {
	const op = "mlp_block"
	ws := []Array{w.Norm, w.Gate, w.Up, w.Down}
	checkBlockInputs(op, x, r, ws)
	xs := x.Shape()
	h, i := xs[len(xs)-1], w.Gate.Dim(0)
	want := [][]int{{h}, {i, h}, {i, h}, {h, i}}
	for j, a := range ws {
		if !slices.Equal(a.Shape(), want[j]) {
			shapePanic(op, "weight %d has shape %v, want %v (H %d, I %d)", j, a.Shape(), want[j], h, i)
		}
	}
	p := &kernels.MLPBlockParams{T: linalgSize(xs[:len(xs)-1]), H: h, I: i, Eps: eps}
	checkTaken(op, x.Graph(), kernels.KMLPBlock, p, "H %d, I %d", h, i)
	if !(eps >= 0) || math.IsInf(eps, 0) {
		shapePanic(op, "eps %v must be finite and >= 0", eps)
	}
	args := append([]Array{x, r}, ws...)
	for j, a := range args {
		args[j] = Contiguous(a)
	}
	return Array{x.Graph().Apply(kernels.KMLPBlock, p, Float32, xs, handles(args)...)}
}

// GDNWeights are the weights of a Gated DeltaNet layer's decode step (see
// kernels.KGDNBlock): the input norm [H]; the projections QKV, Z, B, A (Qwen3.5's
// in_proj_qkv, _z, _b, _a) or, for grouped projections, QKV = in_proj_qkvz and
// B = in_proj_ba (Z and A unused); Conv [C, K]; NegA = -exp(A_log) and DtBias [Hv];
// GatedNorm [Dv]; Out [H, Hv*Dv].
type GDNWeights struct {
	Norm, QKV, Z, B, A, Conv, NegA, DtBias, GatedNorm, Out Array
}

// GDNParams are a GDN layer's sizes and constants for GDNDecode (the kernels'
// parameter struct, so model packages need not import kernels).
type GDNParams = kernels.GDNBlockParams

// GDNBlockFits reports whether g's device takes GDNDecode for a layer of these sizes
// (p.B is ignored; see graph.TakesFused).
func GDNBlockFits(g *graph.Graph, p GDNParams) bool {
	p.B = 1
	return graph.TakesFused(g.Device(), kernels.KGDNBlock, &p)
}

// GDNStep is the result of GDNDecode.
type GDNStep struct {
	// Out is 1-D float32: the mixer's output r [B, H], then the new recurrent state
	// (MoEBlockAfter reads r from it in place).
	Out Array
	// Conv and State are the next conv state [B, K-1, C] (a view of the conv window)
	// and the new recurrent state [B, Hv, Dv, Dk] (a view of Out).
	Conv, State Array
	b, h        int
}

// R returns the mixer's output r [B, 1, H], a view of Out.
func (s *GDNStep) R() Array { return view(s.Out, kernels.Contiguous(Float32, s.b, 1, s.h)) }

// GDNDecode runs a GDN layer's decode step for one new token per row in two nodes
// (kernels.KGDNConvStep, kernels.KGDNBlock): x [B, 1, H] (the layer's input, before its
// norm), convState [B, K-1, C], state [B, Hv, Dv, Dk], mask bool [B, 1] (true = valid)
// or invalid for none; all float32. p gives the sizes and constants (its B is set from
// x).
func GDNDecode(x Array, w *GDNWeights, p GDNParams, convState, state, mask Array) *GDNStep {
	const op = "gdn_decode"
	if !x.Valid() || x.NDim() != 3 || x.Dim(1) != 1 {
		shapePanic(op, "x %v must be [B, 1, H]", x.Shape())
	}
	p.B = x.Dim(0)
	if !kernels.GDNBlockFits(&p) || x.Dim(2) != p.H {
		shapePanic(op, "x %v and sizes %+v: outside the kernel's limits", x.Shape(), p)
	}
	if !GDNBlockFits(x.Graph(), p) {
		shapePanic(op, "the %s device takes the unfused kernels at sizes %+v (graph.TakesFused)", x.Graph().Device().Name(), p)
	}
	c, vd := 2*p.Hk*p.Dk+p.Hv*p.Dv, p.Hv*p.Dv
	nq, nz, nba := c, vd, p.Hv
	z, a := w.Z, w.A
	if p.Grouped {
		nq = p.Hk * (2*p.Dk + 2*vd/p.Hk)
		nz, nba = nq, 2*p.Hv
		z, a = w.QKV, w.B
	}
	checks := []struct {
		a    Array
		name string
		want []int
	}{
		{w.Norm, "norm", []int{p.H}}, {w.QKV, "qkv", []int{nq, p.H}}, {z, "z", []int{nz, p.H}},
		{w.B, "b", []int{nba, p.H}}, {a, "a", []int{nba, p.H}}, {w.Conv, "conv", []int{c, p.K}},
		{w.NegA, "negA", []int{p.Hv}}, {w.DtBias, "dtBias", []int{p.Hv}}, {w.GatedNorm, "gated norm", []int{p.Dv}},
		{w.Out, "out", []int{p.H, vd}}, {convState, "conv state", []int{p.B, p.K - 1, c}},
		{state, "state", []int{p.B, p.Hv, p.Dv, p.Dk}}, {x, "x", []int{p.B, 1, p.H}},
	}
	for _, ch := range checks {
		same(op, x, ch.a)
		if ch.a.DType() != Float32 || !slices.Equal(ch.a.Shape(), ch.want) {
			shapePanic(op, "%s is %v %v, want float32 %v", ch.name, ch.a.DType(), ch.a.Shape(), ch.want)
		}
	}
	var m []Array
	if mask.Valid() {
		same(op, x, mask)
		if !slices.Equal(mask.Shape(), []int{p.B, 1}) {
			shapePanic(op, "mask %v must be [B, 1] = %v", mask.Shape(), []int{p.B, 1})
		}
		m = []Array{Contiguous(mask.AsType(Bool))}
		p.Masked = true
	}
	g := x.Graph()
	dense := func(as ...Array) []Array {
		for i, a := range as {
			as[i] = Contiguous(a)
		}
		return as
	}
	xs := Contiguous(x)
	pc, pb := p, p
	step := append(dense(xs, w.Norm, w.QKV, convState), m...)
	window := Array{g.Apply(kernels.KGDNConvStep, &pc, Float32, []int{p.B, p.K, c}, handles(step)...)}
	blk := append(dense(xs, w.Norm, window, w.Conv, z, w.B, a, w.NegA, w.DtBias, state, w.GatedNorm, w.Out), m...)
	nr, ns := p.B*p.H, p.B*p.Hv*p.Dv*p.Dk
	out := Array{g.Apply(kernels.KGDNBlock, &pb, Float32, []int{nr + ns}, handles(blk)...)}
	sl := kernels.Contiguous(Float32, p.B, p.Hv, p.Dv, p.Dk)
	sl.Offset = nr
	// The next conv state is the window's last K-1 rows, as the unfused path keeps it.
	return &GDNStep{Out: out, Conv: SliceAxis(window, 1, 1, p.K), State: view(out, sl), b: p.B, h: p.H}
}

// checkTaken panics unless k takes p's sizes (the kernel's limits) and g's device takes
// the fused block at them; sizes describes p for the message.
func checkTaken(op string, g *graph.Graph, k *kernels.Kernel, p any, sizes string, args ...any) {
	switch {
	case !kernels.FusedBlockFits(k, p):
		shapePanic(op, "sizes "+sizes+" exceed the kernel's limits", args...)
	case !graph.TakesFused(g.Device(), k, p):
		shapePanic(op, "the %s device takes the unfused kernels at sizes %s (graph.TakesFused)",
			g.Device().Name(), fmt.Sprintf(sizes, args...))
	}
}

// checkBlockInputs requires x, r and the weights ws on one graph and all float32: the
// fused blocks compute in float32 only (callers fall back to the unfused ops before).
func checkBlockInputs(op string, x, r Array, ws []Array) {
	for _, a := range append([]Array{r}, ws...) {
		same(op, x, a)
	}
	for _, a := range append([]Array{x, r}, ws...) {
		if a.DType() != Float32 {
			shapePanic(op, "takes float32 only, got %v", a.DType())
		}
	}
}
