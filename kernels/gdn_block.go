package kernels

import (
	"fmt"
	"math"
)

// Family "gdn_block": a Gated DeltaNet layer's decode step (one new token per row) in
// two kernels instead of about thirty nodes: gdn_conv_step makes the conv window (whose
// last K-1 rows are the next conv state), gdn_block everything else, from the layer's
// input to its output projection. Two kernels because the cache keeps the conv state
// and the recurrent state in two buffers, as the unfused path does: the live-buffer
// counts, and their size classes, are the same either way.

// GDNBlockParams is the parameter struct of both kernels: B rows of hidden size H; Hk
// key heads of size Dk, Hv value heads of size Dv; conv kernel K (>= 2). Grouped: the
// projections are Qwen3-Next's fused in_proj_qkvz / in_proj_ba, rows grouped per key
// head ([q k v z] and [b a]); otherwise Qwen3.5's in_proj_qkv, in_proj_z, in_proj_b,
// in_proj_a. Masked: the launch has a mask argument. Eps is the RMSNorm epsilon (the
// input norm and the gated norm), QKEps that of the q/k normalisation, whose weights
// are the constants QScale and KScale.
type GDNBlockParams struct {
	B, H, Hk, Hv, Dk, Dv, K int
	Grouped                 bool    `msl:"grouped"`
	Masked                  bool    `msl:"masked"`
	Eps                     float64 `msl:"eps"`
	QKEps                   float64 `msl:"qk_eps"`
	QScale                  float64 `msl:"q_scale"`
	KScale                  float64 `msl:"k_scale"`
}

// keyDim, valueDim and conC are the q (or k) width, the v (or z, or y) width and the
// conv channels.
func (p *GDNBlockParams) keyDim() int   { return p.Hk * p.Dk }
func (p *GDNBlockParams) valueDim() int { return p.Hv * p.Dv }
func (p *GDNBlockParams) conC() int     { return 2*p.keyDim() + p.valueDim() }

// Limits of the Metal twins, which hold a row's vectors in threadgroup memory
// (gdn_block.metal's GB_MAX_*).
const (
	GDNBlockMaxH  = 1024 // hidden size
	GDNBlockMaxC  = 3072 // conv channels 2*Hk*Dk + Hv*Dv
	GDNBlockMaxV  = 1024 // value width Hv*Dv
	GDNBlockMaxHv = 64   // value heads
)

// GDNBlockFits reports whether both kernels take these sizes (callers fall back to
// the unfused ops otherwise).
func GDNBlockFits(p *GDNBlockParams) bool {
	return p.B >= 0 && p.H >= 1 && p.H <= GDNBlockMaxH && p.Hk >= 1 && p.Hv%p.Hk == 0 &&
		p.Hv <= GDNBlockMaxHv && p.Dk >= 1 && p.Dk <= GatedDeltaMaxDk && p.Dv >= 1 &&
		p.valueDim() <= GDNBlockMaxV && p.conC() <= GDNBlockMaxC && p.K >= 2
}

// Row maps of the projections: which weight row gives conv channel c, z channel j, and
// the b and a inputs of value head h. Qwen3-Next groups per key head g: [q(Dk) k(Dk)
// v(r*Dv) z(r*Dv)] and [b(r) a(r)], r = Hv/Hk.
func (p *GDNBlockParams) qkvRow(c int) int {
	if !p.Grouped {
		return c
	}
	kd, rdv := p.keyDim(), p.valueDim()/p.Hk
	w := 2*p.Dk + 2*rdv
	switch {
	case c < kd:
		return c/p.Dk*w + c%p.Dk
	case c < 2*kd:
		c -= kd
		return c/p.Dk*w + p.Dk + c%p.Dk
	}
	c -= 2 * kd
	return c/rdv*w + 2*p.Dk + c%rdv
}

func (p *GDNBlockParams) zRow(j int) int {
	if !p.Grouped {
		return j
	}
	rdv := p.valueDim() / p.Hk
	return j/rdv*(2*p.Dk+2*rdv) + 2*p.Dk + rdv + j%rdv
}

// baRow is the row of value head h's b input (a: ofs = 1).
func (p *GDNBlockParams) baRow(h, ofs int) int {
	if !p.Grouped {
		return h
	}
	r := p.Hv / p.Hk
	return h/r*2*r + ofs*r + h%r
}

// projRows is the row count of the qkv (or qkvz) weight and of the z, b, a weights.
func (p *GDNBlockParams) projRows() (qkv, z, ba int) {
	if p.Grouped {
		n := p.Hk * (2*p.Dk + 2*p.valueDim()/p.Hk)
		return n, n, 2 * p.Hv
	}
	return p.conC(), p.valueDim(), p.Hv
}

// KGDNConvStep makes a GDN layer's conv window for one new token per row: with
// h = rms_norm(x, norm) and qkv = Wqkv h (the conv input, zero for a masked row),
// out[b] = [state[b], qkv], oldest first; its last K-1 rows are the next conv state.
// Args x [B, H], norm [H], Wqkv (in_proj_qkv, or in_proj_qkvz when Grouped), state
// [B, K-1, C], optionally mask (bool [B], true = valid), out [B, K, C]; float32, dense.
var KGDNConvStep = Register(&Kernel{Name: "gdn_conv_step", Family: "gdn_block", CPU: gdnConvStepCPU, Encode: gdnConvStepEncode})

// KGDNBlock is the rest of a GDN layer's decode step: h = rms_norm(x, norm); the conv
// window gdn_conv_step made through the depthwise conv and silu; q and k l2-normalised (an
// RMSNorm with weights QScale, KScale and epsilon QKEps); beta = sigmoid(b); decay
// g = -exp(A_log) * softplus(a + dt_bias); the gated delta rule on the recurrent state;
// the gated RMSNorm rms_norm(y, gnorm) * silu(z) per value head; the output projection.
// Args x [B, H], norm [H], window [B, K, C], convW [C, K], Wz, Wb, Wa
// (in_proj_z, _b, _a; or in_proj_qkvz, in_proj_ba, in_proj_ba when Grouped), negA
// [Hv] (-exp(A_log)), dtBias [Hv], state [B, Hv, Dv, Dk], gnorm [Dv], Wout [H, Hv*Dv],
// optionally mask (bool [B]), out: 1-D float32 packing r [B, H] then the new state
// [B, Hv, Dv, Dk]. A masked row keeps its state and outputs Wout . 0 = 0. Every step is
// the unfused op's arithmetic, in the same order.
var KGDNBlock = Register(&Kernel{Name: "gdn_block", Family: "gdn_block", CPU: gdnBlockCPU, Encode: gdnBlockEncode})

// gdnCheck validates a launch of nargs arguments (inputs and output) without a mask, or
// nargs+1 with the mask at nargs-1 (p.Masked), and returns its parameters.
func gdnCheck(l *Launch, name string, nargs int) *GDNBlockParams {
	p := l.Params.(*GDNBlockParams)
	if p.Masked {
		nargs++
	}
	if l.NArgs != nargs || !GDNBlockFits(p) {
		panic(fmt.Sprintf("kernels: %s: %d args, sizes %+v", name, l.NArgs, *p))
	}
	for i := 0; i < l.NArgs; i++ {
		if !p.Masked || i != nargs-2 {
			mustFloat32(name, &l.Args[i])
		}
	}
	return p
}

// gdnMask is row b's mask byte reader (every row valid without a mask argument).
func gdnMask(l *Launch, nargs int) func(b int) bool {
	if l.NArgs == nargs {
		return func(int) bool { return true }
	}
	m := &l.Args[nargs-1]
	return func(b int) bool { return m.Data[m.Offset+b] != 0 }
}

// gdnF32 is the n float32 elements of argument i.
func gdnF32(l *Launch, i, n int) []float32 {
	a := &l.Args[i]
	return F32(a.Data)[a.Offset : a.Offset+n]
}

// rmsNormRow writes rms_norm(x, w, eps) into h (the rms_norm kernel's arithmetic).
func rmsNormRow(x, w, h []float32, eps float64) {
	s := rmsScale(x, eps)
	for i, v := range x {
		h[i] = v * s * w[i]
	}
}

// gdnProject writes out[i] = W[row(i)] . h, each a dot in the linear kernel's order
// (gemvF32's rows, vectorised or not, add in one fixed order). Rows in order (Qwen3.5's
// separate projections) go through gemvF32 at once, the linear kernel's own call.
func gdnProject(h, w []float32, row func(int) int, inOrder bool, out []float32) {
	k := len(h)
	if inOrder {
		gemvF32(h, w, k, out)
		return
	}
	for i := range out {
		r := row(i)
		gemvF32(h, w[r*k:(r+1)*k], k, out[i:i+1])
	}
}

func gdnConvStepCPU(l *Launch) {
	p := gdnCheck(l, "gdn_conv_step", 5)
	B, H, C, K := p.B, p.H, p.conC(), p.K
	nq, _, _ := p.projRows()
	xs, nw, wq := gdnF32(l, 0, B*H), gdnF32(l, 1, H), gdnF32(l, 2, nq*H)
	st, out := gdnF32(l, 3, B*(K-1)*C), gdnF32(l, l.NArgs-1, B*K*C)
	valid := gdnMask(l, 5)
	prefetch(wq)
	hp := getScratch(H)
	defer putScratch(hp)
	h := *hp
	for b := 0; b < B; b++ {
		o := out[b*K*C : (b+1)*K*C]
		copy(o, st[b*(K-1)*C:(b+1)*(K-1)*C])
		last := o[(K-1)*C:]
		if !valid(b) {
			clear(last) // the masked conv input is zero, as Where makes it
			continue
		}
		rmsNormRow(xs[b*H:(b+1)*H], nw, h, p.Eps)
		gdnProject(h, wq, p.qkvRow, !p.Grouped, last)
	}
}

func gdnBlockCPU(l *Launch) {
	p := gdnCheck(l, "gdn_block", 13)
	B, H, C, K, Hk, Hv, Dk, Dv := p.B, p.H, p.conC(), p.K, p.Hk, p.Hv, p.Dk, p.Dv
	kd, vd := p.keyDim(), p.valueDim()
	_, nz, nba := p.projRows()
	xs, nw := gdnF32(l, 0, B*H), gdnF32(l, 1, H)
	window, cw := gdnF32(l, 2, B*K*C), gdnF32(l, 3, C*K)
	wz, wb, wa := gdnF32(l, 4, nz*H), gdnF32(l, 5, nba*H), gdnF32(l, 6, nba*H)
	negA, dtBias := gdnF32(l, 7, Hv), gdnF32(l, 8, Hv)
	ns := Hv * Dv * Dk
	st, gw, wo := gdnF32(l, 9, B*ns), gdnF32(l, 10, Dv), gdnF32(l, 11, H*vd)
	out := gdnF32(l, l.NArgs-1, B*H+B*ns)
	rs, sts := out[:B*H], out[B*H:]
	valid := gdnMask(l, 13)
	prefetch(st, wz, wo)

	// One scratch allocation per launch: h [H], conv [C], exp [max(C, vd)], z and y
	// [vd], b, a, beta and g [Hv].
	sp := getScratch(H + C + max(C, vd) + 2*vd + 4*Hv)
	defer putScratch(sp)
	scratch := *sp
	cut := func(n int) []float32 { v := scratch[:n:n]; scratch = scratch[n:]; return v }
	h, conv, ex := cut(H), cut(C), cut(max(C, vd))
	z, y := cut(vd), cut(vd)
	bIn, aIn, beta, g := cut(Hv), cut(Hv), cut(Hv), cut(Hv)
	qs, ks := float32(p.QScale), float32(p.KScale)
	r := Hv / Hk
	for b := 0; b < B; b++ {
		stOut := sts[b*ns : (b+1)*ns]
		copy(stOut, st[b*ns:(b+1)*ns])
		rmsNormRow(xs[b*H:(b+1)*H], nw, h, p.Eps)
		// Projections z, b, a; beta = sigmoid(b), g = softplus(a + dt_bias) * -exp(A_log).
		// z is not needed until the gated norm: a helper, if one is waiting, computes it
		// while this goroutine runs the conv and the delta rule.
		if p.Grouped {
			gdnProject(h, wz, p.zRow, false, z)
		} else {
			l.Helper.postOrRun(helpJob{x: h, w: wz, ld: H, out: z})
		}
		gdnProject(h, wb, func(i int) int { return p.baRow(i, 0) }, !p.Grouped, bIn)
		gdnProject(h, wa, func(i int) int { return p.baRow(i, 1) }, !p.Grouped, aIn)
		expArray(ex[:Hv], bIn, -1, 0)
		for i := range beta {
			beta[i] = 1 / (1 + ex[i])
			g[i] = float32(softplus(float64(aIn[i]+dtBias[i]))) * negA[i]
		}
		// The conv over the window (the depthwise_conv1d kernel's sum), then silu.
		convRow(conv, cw, window[b*K*C:(b+1)*K*C], K)
		expArray(ex[:C], conv, -1, 0)
		for c, v := range conv {
			conv[c] = v / (1 + ex[c])
		}
		// q and k: rms_norm per head with the constant weights.
		for hd := 0; hd < 2*Hk; hd++ {
			row := conv[hd*Dk : (hd+1)*Dk]
			s := rmsScale(row, p.QKEps)
			w := qs
			if hd >= Hk {
				w = ks
			}
			for i, v := range row {
				row[i] = v * s * w
			}
		}
		// The gated delta rule, one step (gated_delta's arithmetic).
		if !valid(b) {
			clear(y)
		} else {
			for hv := 0; hv < Hv; hv++ {
				ko := hv / r * Dk
				kk, qq := conv[kd+ko:kd+ko+Dk], conv[ko:ko+Dk]
				decay := float32(math.Exp(float64(g[hv])))
				vs := conv[2*kd+hv*Dv : 2*kd+(hv+1)*Dv]
				yh := y[hv*Dv : (hv+1)*Dv]
				s := stOut[hv*Dv*Dk : (hv+1)*Dv*Dk]
				if Dk == 16 {
					gdStep16(s, kk, qq, vs, yh, decay, beta[hv])
					continue
				}
				for i := range yh {
					row := s[i*Dk : i*Dk+Dk]
					delta := (vs[i] - gdDecayDot(row, kk, decay)) * beta[hv]
					yh[i] = gdUpdateDot(row, kk, qq, delta)
				}
			}
		}
		// Gated RMSNorm per value head (gated_rms_norm's arithmetic), then out_proj.
		l.Helper.join() // z
		for hv := 0; hv < Hv; hv++ {
			yh, zh := y[hv*Dv:(hv+1)*Dv], z[hv*Dv:(hv+1)*Dv]
			s := rmsScale(yh, p.Eps)
			for i, v := range yh {
				yh[i] = v * s * gw[i]
			}
			gateSilu(yh, zh)
		}
		gemvF32(y, wo, vd, rs[b*H:(b+1)*H])
	}
}

// gdnThreads is the Metal twins' threadgroup width (before the pipeline's limit).
const gdnThreads = 128

// gdnEncode binds n fixed arguments, the mask (or a placeholder the kernel never reads)
// at n, the output at n+1 and the parameters at n+2: one threadgroup per row.
func gdnEncode(l *Launch, e Encoder, entry string, p *GDNBlockParams, n int) {
	e.Entry(entry)
	for i := 0; i < n; i++ {
		e.SetArg(i, &l.Args[i])
	}
	if p.Masked {
		e.SetArg(n, &l.Args[n])
	} else {
		e.SetArg(n, &l.Args[0])
	}
	e.SetArg(n+1, l.Out())
	e.SetBytes(n+2, mslPack(p))
	if p.B == 0 {
		return
	}
	e.DispatchThreadgroups([3]int{p.B, 1, 1}, ClampGroup(gdnThreads, e))
}

func gdnConvStepEncode(l *Launch, e Encoder) {
	gdnEncode(l, e, "gdn_conv_step_float32", gdnCheck(l, "gdn_conv_step", 5), 4)
}

func gdnBlockEncode(l *Launch, e Encoder) {
	gdnEncode(l, e, "gdn_block_float32", gdnCheck(l, "gdn_block", 13), 12)
}
