package kernels

import "math/rand"

// SwitchGLUParams is the parameter struct of KSwitchGLU: T token rows of width H, k
// experts per token out of E, expert width I.
type SwitchGLUParams struct{ T, H, K, E, I int }

// KSwitchGLU is the MoE expert block fused into one kernel (SwitchGLU): for token t and
// its k routed experts e_j with weights s_j,
//
//	y[t] = sum_j s_j * down[e_j] @ (silu(gate[e_j] @ x[t]) * (up[e_j] @ x[t]))
//
// Args x [T, H], gate [E, I, H], up [E, I, H], down [E, H, I], idx int32 [T, k],
// scores [T, k], out [T, H]; all dense float32. It computes what gather_mm, silu, mul,
// gather_mm, mul and sum compute one op at a time (the same dot order and silu, float32), in
// one launch instead of about a dozen nodes per layer. An index outside [-E, E)
// contributes nothing (negative ones wrap, as take does).
var KSwitchGLU = Register(&Kernel{Name: "switch_glu", Family: "moe", CPU: switchGLUCPU, Encode: switchGLUEncode})

func switchGLUCPU(l *Launch) {
	p := l.Params.(*SwitchGLUParams)
	x, gate, up, down, ix, sc, o := &l.Args[0], &l.Args[1], &l.Args[2], &l.Args[3], &l.Args[4], &l.Args[5], &l.Args[6]
	mustFloat32("switch_glu", x, gate, up, down, sc, o)
	H, I, K := p.H, p.I, p.K
	xs := F32(x.Data)[x.Offset : x.Offset+p.T*H]
	gs := F32(gate.Data)[gate.Offset : gate.Offset+p.E*I*H]
	us := F32(up.Data)[up.Offset : up.Offset+p.E*I*H]
	ds := F32(down.Data)[down.Offset : down.Offset+p.E*H*I]
	idx := I32(ix.Data)[ix.Offset : ix.Offset+p.T*K]
	ss := F32(sc.Data)[sc.Offset : sc.Offset+p.T*K]
	ys := F32(o.Data)[o.Offset : o.Offset+p.T*H]
	// Scratch: gate, up and exp(-gate) [I] each, the down projection [H].
	var buf [1024]float32
	scratch := buf[:0]
	if 3*I+H > len(buf) {
		scratch = make([]float32, 0, 3*I+H)
	}
	scratch = scratch[:3*I+H]
	for t := 0; t < p.T; t++ {
		switchGLURow(xs[t*H:(t+1)*H], ys[t*H:(t+1)*H], gs, us, ds, idx[t*K:(t+1)*K], ss[t*K:(t+1)*K], p.E, I, scratch)
	}
}

// switchGLURow is one token of switch_glu: yr = sum_j s_j * expert e_j (xr), e_j = idx[j].
// scratch holds at least 3*I + H floats. The moe_block family shares it, so both compute
// the experts in the same order.
// swiGLU writes out = down . (silu(gate . x) * (up . x)) for one row x: gate and up
// [I, len(x)], down [len(out), I], with act, upv and ex I floats of scratch. silu is the
// unary kernel's (x / (1 + exp(-x))), so every expert, shared expert and dense MLP of
// the fused blocks computes it alike.
func swiGLU(x, gate, up, down, act, upv, ex, out []float32) {
	gemvF32(x, gate, len(x), act)
	gemvF32(x, up, len(x), upv)
	expArray(ex, act, -1, 0)
	for i, g := range act {
		act[i] = g / (1 + ex[i]) * upv[i]
	}
	gemvF32(act, down, len(act), out)
}

func switchGLURow(xr, yr, gs, us, ds []float32, idx []int32, ss []float32, E, I int, scratch []float32) {
	H := len(xr)
	act, upv, ex, dn := scratch[:I], scratch[I:2*I], scratch[2*I:3*I], scratch[3*I:3*I+H]
	clear(yr)
	for j := range idx {
		e, ok := gatherIndex(idx[j], E)
		if !ok {
			continue
		}
		swiGLU(xr, gs[e*I*H:(e+1)*I*H], us[e*I*H:(e+1)*I*H], ds[e*H*I:(e+1)*H*I], act, upv, ex, dn)
		s := ss[j]
		for h, d := range dn {
			yr[h] += float32(d * s)
		}
	}
}

func switchGLUEncode(l *Launch, e Encoder) {
	p := l.Params.(*SwitchGLUParams)
	prm := mslPack(p)
	act := 4 * max(1, p.T*p.K*p.I) // the activations [T, k, I]
	// Pass 1: every routed expert's activations, moeRows of them per threadgroup.
	e.Entry("switch_glu_act_float32")
	for _, i := range []int{0, 1, 2, 4} {
		e.SetArg(i, &l.Args[i])
	}
	e.SetBytes(7, prm)
	e.Scratch(8, act)
	e.DispatchThreadgroups([3]int{max((p.I+moeRows-1)/moeRows, 1), max(p.T*p.K, 1), 1}, ClampGroup(moeThreadsFor(p.H)[0], e))
	// Pass 2: the outputs, moeRows per threadgroup, each down row read once a token.
	e.Entry("switch_glu_down_float32")
	for _, i := range []int{3, 4, 5, 6} {
		e.SetArg(i, &l.Args[i])
	}
	e.SetBytes(7, prm)
	e.Scratch(8, act)
	e.DispatchThreadgroups([3]int{max((p.H+moeRows-1)/moeRows, 1), max(p.T, 1), 1}, ClampGroup(moeThreadsFor(p.K * p.I)[0], e))
}

// moeRows and moeMaxSimdgroups are moe.metal's MOE_ROWS and MOE_MAXSG.
const (
	moeRows          = 8
	moeMaxSimdgroups = 8
)

// moeThreadsFor is the threadgroup width of a switch_glu pass whose rows have n
// elements: about 8 a lane, at most moeMaxSimdgroups simdgroups.
func moeThreadsFor(n int) [3]int {
	return [3]int{32 * min(moeMaxSimdgroups, max(1, (n+255)/256)), 1, 1}
}

func init() { RegisterSamples("moe", sampleSwitchGLU) }

func sampleSwitchGLU(rng *rand.Rand) []*Launch {
	var out []*Launch
	for _, c := range []struct{ t, h, k, e, i int }{{1, 64, 2, 8, 32}, {3, 16, 2, 4, 8}, {2, 24, 3, 5, 10}} {
		x := randArg(rng, Contiguous(Float32, c.t, c.h), -1, 1)
		g := randArg(rng, Contiguous(Float32, c.e, c.i, c.h), -0.3, 0.3)
		u := randArg(rng, Contiguous(Float32, c.e, c.i, c.h), -0.3, 0.3)
		d := randArg(rng, Contiguous(Float32, c.e, c.h, c.i), -0.3, 0.3)
		ix := NewArg(Contiguous(Int32, c.t, c.k))
		for i := range I32(ix.Data) {
			I32(ix.Data)[i] = int32(rng.Intn(c.e+2) - 1) // -1 wraps; E is out of range
		}
		s := randArg(rng, Contiguous(Float32, c.t, c.k), 0, 1)
		out = append(out, launch(KSwitchGLU, &SwitchGLUParams{T: c.t, H: c.h, K: c.k, E: c.e, I: c.i},
			x, g, u, d, ix, s, NewArg(Contiguous(Float32, c.t, c.h))))
	}
	return out
}
