package kernels

import (
	"fmt"
	"math/rand"
)

// Family "moe_block": a whole sparse-MoE feed-forward block with its residual and its
// pre-norm, one node per layer and token instead of about twenty.

// MoEBlockParams is the parameter struct of KMoEBlock: T token rows of width H, a router
// over E experts of width I choosing K per token (Renorm: the K scores renormalised to
// sum 1, Qwen's norm_topk_prob), a shared expert of width Is, and the RMSNorm epsilon.
type MoEBlockParams struct {
	T, H, E, K, I, Is int
	Renorm            bool    `msl:"renorm"`
	Eps               float64 `msl:"eps"`
}

// KMoEBlock is the residual add, the post-mixer RMSNorm and the sparse MoE block of a
// Qwen3.5-MoE layer fused into one kernel. For token t, with x1 = x + r:
//
//	h      = rms_norm(x1, norm)                      (RMSNorm, float64 sum of squares)
//	p      = softmax(router @ h)                     (over the E experts)
//	e, s   = top-K of p (ties to the lower index); s /= sum(s) when Renorm
//	y      = sum_j s_j * down[e_j] @ (silu(gate[e_j] @ h) * (up[e_j] @ h))
//	shared = sdown @ (silu(sgate @ h) * (sup @ h))
//	out    = x1 + (y + shared * sigmoid(sgw . h))
//
// Args x, r [T, H]; norm [H]; router [E, H]; gate, up [E, I, H]; down [E, H, I]; sgate,
// sup [Is, H]; sdown [H, Is]; sgw [1, H]; out [T, H]; all dense float32. Each step is the
// unfused op's own arithmetic (the same dot order, exp, softmax and top-k rules), so
// the result agrees with the op-by-op path within float32 noise.
var KMoEBlock = Register(&Kernel{Name: "moe_block", Family: "moe_block", CPU: moeBlockCPU, Encode: moeBlockEncode})

// Limits of the Metal twin, which holds a token's vectors in threadgroup memory
// (moe_block.metal's MB_MAX_*): about 26 KiB at the maxima.
const (
	MoEBlockMaxH = 2048 // hidden size
	MoEBlockMaxI = 2048 // routed and shared expert widths
	MoEBlockMaxE = 512  // experts
)

// MoEBlockFits reports whether the Metal twin takes these sizes; callers fall back to
// the unfused ops when it does not.
func MoEBlockFits(h, e, k, i, is int) bool {
	return h >= 1 && h <= MoEBlockMaxH && e >= 1 && e <= MoEBlockMaxE && k >= 1 && k <= min(e, TopKMax) &&
		i >= 1 && i <= MoEBlockMaxI && is >= 1 && is <= MoEBlockMaxI
}

func moeBlockCheck(l *Launch) *MoEBlockParams {
	p := l.Params.(*MoEBlockParams)
	checkBlockLaunch(l, "moe_block", 12, MoEBlockFits(p.H, p.E, p.K, p.I, p.Is), *p)
	return p
}

// checkBlockLaunch panics unless l has nargs float32 arguments and sizes the Metal twin
// takes (fits): the layers fall back to unfused ops before building anything else.
func checkBlockLaunch(l *Launch, name string, nargs int, fits bool, sizes any) {
	if l.NArgs != nargs || !fits {
		panic(fmt.Sprintf("kernels: %s: %d args, sizes %+v", name, l.NArgs, sizes))
	}
	for i := 0; i < l.NArgs; i++ {
		mustFloat32(name, &l.Args[i])
	}
}

// residualNorm is the blocks' first step: x1 = x + r (the residual add), h =
// rms_norm(x1, w) (the post-attention norm, the rms_norm kernel's arithmetic).
func residualNorm(x, r, w []float32, eps float64, x1, h []float32) {
	for i := range x1 {
		x1[i] = x[i] + r[i]
	}
	rmsNormRow(x1, w, h, eps)
}

func moeBlockCPU(l *Launch) {
	p := moeBlockCheck(l)
	T, H, E, K, I, Is := p.T, p.H, p.E, p.K, p.I, p.Is
	f := func(i, n int) []float32 { a := &l.Args[i]; return F32(a.Data)[a.Offset : a.Offset+n] }
	xs, rs, nw, router := f(0, T*H), f(1, T*H), f(2, H), f(3, E*H)
	gs, us, ds := f(4, E*I*H), f(5, E*I*H), f(6, E*H*I)
	sg, su, sd, sgw := f(7, Is*H), f(8, Is*H), f(9, H*Is), f(10, H)
	out := f(11, T*H)
	// Scratch: x1, h, y, shared [H]; logits, probs [E]; the expert block's 3*max(I, Is)+H.
	wi := max(I, Is)
	sp := getScratch(4*H + 2*E + 3*wi + H + 3*Is)
	defer putScratch(sp)
	scratch := *sp
	x1, h, y, sh := scratch[:H], scratch[H:2*H], scratch[2*H:3*H], scratch[3*H:4*H]
	logits, probs := scratch[4*H:4*H+E], scratch[4*H+E:4*H+2*E]
	glu := scratch[4*H+2*E : 4*H+2*E+3*wi+H]
	shScratch := scratch[4*H+2*E+3*wi+H:]
	var vals [TopKMax]float32
	var ids [TopKMax]int32
	var sc [TopKMax]float32
	var gate [1]float32
	for t := 0; t < T; t++ {
		or := out[t*H : (t+1)*H]
		prefetch(router, sg, su, sd)
		residualNorm(xs[t*H:(t+1)*H], rs[t*H:(t+1)*H], nw, p.Eps, x1, h)
		// The shared expert (the dense SwiGLU MLP; its sigmoid gate below) goes to a
		// helper, if one is waiting, while this goroutine routes and runs the routed
		// experts: the two read their weights from memory at once. Its scratch is its own.
		l.Helper.postOrRun(helpJob{glu: true, x: h, w: sg, up: su, down: sd,
			act: shScratch[:Is], upv: shScratch[Is : 2*Is], ex: shScratch[2*Is : 3*Is], out: sh})
		gemvF32(h, router, H, logits)
		softmaxRow(logits, probs)
		n := topkRow(probs, K, &vals, &ids)
		for j := 0; j < n; j++ {
			sc[j] = probs[ids[j]]
		}
		prefetchExperts(gs, us, ds, ids[:n], E, I*H)
		if p.Renorm {
			sum := float32(sumRow(sc[:n]))
			for j := 0; j < n; j++ {
				sc[j] /= sum
			}
		}
		switchGLURow(h, y, gs, us, ds, ids[:n], sc[:n], E, I, glu)
		l.Helper.join() // the shared expert
		gemvF32(h, sgw, H, gate[:])
		e := exp32(-gate[0])
		gv := 1 / (1 + e)
		for i := range or {
			or[i] = x1[i] + (y[i] + sh[i]*gv)
		}
	}
}

// moeBlockThreads is the Metal twin's threadgroup width (before the pipeline's limit).
const moeBlockThreads = 256

func moeBlockEncode(l *Launch, e Encoder) {
	p := moeBlockCheck(l)
	e.Entry("moe_block_float32")
	for i := 0; i < 12; i++ {
		e.SetArg(i, &l.Args[i])
	}
	e.SetBytes(12, mslPack(p))
	// One threadgroup per token; threads stride over H, E and I.
	e.DispatchThreadgroups([3]int{max(p.T, 1), 1, 1}, ClampGroup(moeBlockThreads, e))
}

func init() { RegisterSamples("moe_block", moeBlockSamples) }

// moeBlockSamples: the repro's shape (H 64, 8 experts, top-2, renormalised), a batch of
// three with odd sizes and K = 3 without renormalisation, and K = E. Like the gdn_block
// samples they draw from their own fixed stream, so the families after this one in
// name order keep their inputs.
func moeBlockSamples(*rand.Rand) []*Launch {
	rng := rand.New(rand.NewSource(0x3e))
	var out []*Launch
	for _, c := range []MoEBlockParams{
		{T: 1, H: 64, E: 8, K: 2, I: 32, Is: 32, Renorm: true, Eps: 1e-6},
		{T: 3, H: 37, E: 5, K: 3, I: 10, Is: 13, Eps: 1e-5},
		{T: 2, H: 16, E: 4, K: 4, I: 8, Is: 8, Renorm: true, Eps: 1e-6},
	} {
		c := c
		w := func(lo, hi float64, sh ...int) Arg { return randArg(rng, Contiguous(Float32, sh...), lo, hi) }
		out = append(out, launch(KMoEBlock, &c,
			w(-1, 1, c.T, c.H), w(-1, 1, c.T, c.H), w(0.5, 1.5, c.H), w(-0.5, 0.5, c.E, c.H),
			w(-0.3, 0.3, c.E, c.I, c.H), w(-0.3, 0.3, c.E, c.I, c.H), w(-0.3, 0.3, c.E, c.H, c.I),
			w(-0.3, 0.3, c.Is, c.H), w(-0.3, 0.3, c.Is, c.H), w(-0.3, 0.3, c.H, c.Is), w(-0.3, 0.3, 1, c.H),
			NewArg(Contiguous(Float32, c.T, c.H))))
	}
	return append(out, mlpBlockSamples()...)
}

// MLPBlockParams is the parameter struct of KMLPBlock: T token rows of width H, an MLP
// of width I, the RMSNorm epsilon.
type MLPBlockParams struct {
	T, H, I int
	Eps     float64 `msl:"eps"`
}

// KMLPBlock is a dense layer's residual add, post-mixer RMSNorm and SwiGLU MLP in one
// kernel: with x1 = x + r and h = rms_norm(x1, norm), out = x1 + down @ (silu(gate @ h)
// * (up @ h)). Args x, r [T, H]; norm [H]; gate, up [I, H]; down [H, I]; out [T, H];
// dense float32. The same arithmetic as the ops, in their order (and as moe_block's
// shared expert).
var KMLPBlock = Register(&Kernel{Name: "mlp_block", Family: "moe_block", CPU: mlpBlockCPU, Encode: mlpBlockEncode})

// MLPBlockFits reports whether the Metal twin takes these sizes (hidden h, width i).
func MLPBlockFits(h, i int) bool {
	return h >= 1 && h <= MoEBlockMaxH && i >= 1 && i <= MoEBlockMaxI
}

func mlpBlockCheck(l *Launch) *MLPBlockParams {
	p := l.Params.(*MLPBlockParams)
	checkBlockLaunch(l, "mlp_block", 7, MLPBlockFits(p.H, p.I), *p)
	return p
}

func mlpBlockCPU(l *Launch) {
	p := mlpBlockCheck(l)
	T, H, I := p.T, p.H, p.I
	f := func(i, n int) []float32 { a := &l.Args[i]; return F32(a.Data)[a.Offset : a.Offset+n] }
	xs, rs, nw := f(0, T*H), f(1, T*H), f(2, H)
	gs, us, ds, out := f(3, I*H), f(4, I*H), f(5, H*I), f(6, T*H)
	sp := getScratch(3*H + 3*I)
	defer putScratch(sp)
	scratch := *sp
	x1, h, dn := scratch[:H], scratch[H:2*H], scratch[2*H:3*H]
	act, upv, ex := scratch[3*H:3*H+I], scratch[3*H+I:3*H+2*I], scratch[3*H+2*I:]
	for t := 0; t < T; t++ {
		or := out[t*H : (t+1)*H]
		residualNorm(xs[t*H:(t+1)*H], rs[t*H:(t+1)*H], nw, p.Eps, x1, h)
		swiGLU(h, gs, us, ds, act, upv, ex, dn)
		for i := range or {
			or[i] = x1[i] + dn[i]
		}
	}
}

func mlpBlockEncode(l *Launch, e Encoder) {
	p := mlpBlockCheck(l)
	e.Entry("mlp_block_float32")
	for i := 0; i < 7; i++ {
		e.SetArg(i, &l.Args[i])
	}
	e.SetBytes(7, mslPack(p))
	e.DispatchThreadgroups([3]int{max(p.T, 1), 1, 1}, ClampGroup(moeBlockThreads, e))
}

// mlpBlockSamples: the dense repro's shape (H 64, I 64) and a batch of three with odd
// sizes, from their own fixed stream (see moeBlockSamples).
func mlpBlockSamples() []*Launch {
	rng := rand.New(rand.NewSource(0x4f))
	var out []*Launch
	for _, c := range []MLPBlockParams{{T: 1, H: 64, I: 64, Eps: 1e-6}, {T: 3, H: 37, I: 19, Eps: 1e-5}} {
		c := c
		w := func(lo, hi float64, sh ...int) Arg { return randArg(rng, Contiguous(Float32, sh...), lo, hi) }
		out = append(out, launch(KMLPBlock, &c, w(-1, 1, c.T, c.H), w(-1, 1, c.T, c.H), w(0.5, 1.5, c.H),
			w(-0.3, 0.3, c.I, c.H), w(-0.3, 0.3, c.I, c.H), w(-0.3, 0.3, c.H, c.I), NewArg(Contiguous(Float32, c.T, c.H))))
	}
	return out
}
