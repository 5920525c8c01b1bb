package qwen35

import (
	"math"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/tensor"
)

// gatedDeltaNet is a Gated DeltaNet (linear attention) layer: a causal depthwise conv
// over the projected [q | k | v] channels, then the gated delta rule over a per-head
// recurrent state [Dv, Dk] (mlx-lm's layout), a gated RMSNorm with z, and out_proj.
type gatedDeltaNet struct {
	qkv, z, b, a nn.LinearLayer // Qwen3.5's four input projections
	qkvz, ba     nn.LinearLayer // or Qwen3-Next's two fused ones (then the four are nil)
	out          nn.LinearLayer
	conv         tensor.Array // [C, K]
	negA         tensor.Array // [Hv]: -exp(A_log), precomputed at load
	dtBias       tensor.Array // [Hv]
	norm         nn.GatedRMSNorm
	fw           *tensor.GDNWeights // the fused decode step's weights, or nil (see build)
	fp           *tensor.GDNParams

	hk, hv, dk, dv, kernel int
	keyDim, valueDim, conC int
}

func newGatedDeltaNet(b *nn.Builder, cfg *Config, p string) *gatedDeltaNet {
	hk, hv := cfg.LinearNumKeyHeads, cfg.LinearNumValueHeads
	dk, dv, kk := cfg.LinearKeyHeadDim, cfg.LinearValueHeadDim, cfg.LinearConvKernel
	h := cfg.HiddenSize
	keyDim, valueDim := hk*dk, hv*dv
	c := 2*keyDim + valueDim
	d := &gatedDeltaNet{
		hk: hk, hv: hv, dk: dk, dv: dv, kernel: kk,
		keyDim: keyDim, valueDim: valueDim, conC: c,
	}
	if cfg.FusedGDNProjections() {
		d.qkvz = b.Linear(p+"in_proj_qkvz", 2*keyDim+2*valueDim, h, false)
		d.ba = b.Linear(p+"in_proj_ba", 2*hv, h, false)
	} else {
		d.qkv = b.Linear(p+"in_proj_qkv", c, h, false)
		d.z = b.Linear(p+"in_proj_z", valueDim, h, false)
		d.b = b.Linear(p+"in_proj_b", hv, h, false)
		d.a = b.Linear(p+"in_proj_a", hv, h, false)
	}
	d.conv = b.Array(p+"conv1d.weight", nn.KindConv, c, kk)
	if alog, ok := b.Host(p+"A_log", nn.KindLogDecay, hv); ok {
		defer alog.Done()
		// -exp(A_log) in float32 whatever A_log's stored dtype (HF and mlx-lm both
		// compute the decay from a float32 A_log).
		neg := make([]float32, hv)
		for i := range neg {
			neg[i] = float32(-math.Exp(alog.At(i)))
		}
		d.negA = nn.HostFloat32(neg, hv).Array(b.Graph())
	}
	d.dtBias = b.Array(p+"dt_bias", nn.KindDtBias, hv)
	d.norm = nn.GatedRMSNorm{Weight: b.Array(p+"norm.weight", nn.KindNorm, dv), Eps: cfg.RMSNormEps}
	d.out = b.Linear(p+"out_proj", h, valueDim, false)
	return d
}

// forward maps the layer's input x [B, S, H] to the mixer's output: the fused decode
// step when it applies (fusedStep), else the ops on inNorm(x). mask is the batch's SSM
// mask (bool [B, S], or invalid: every step valid); c is the layer's cache, or nil for
// a cache-free forward. The cache is updated here, once, on either path.
func (d *gatedDeltaNet) forward(m *Model, inNorm nn.RMSNorm, x, mask tensor.Array, c *cache.ArraysCache) mixed {
	if st := d.fusedStep(x, mask, c); st != nil {
		c.Update(st.Conv, st.State, 1)
		return mixed{step: st}
	}
	r, conv, state := d.ops(m, inNorm.Forward(x), mask, c)
	if c != nil {
		c.Update(conv, state, x.Dim(1))
	}
	return mixed{r: r}
}

// ops is the mixer op by op on the normed input x [B, S, H]: r [B, S, H] and the
// cache's next conv and recurrent states (invalid conv state without a cache).
func (d *gatedDeltaNet) ops(m *Model, x, mask tensor.Array, c *cache.ArraysCache) (r, nextConv, state tensor.Array) {
	bsz, s := x.Dim(0), x.Dim(1)
	qkv, z, bIn, aIn := d.project(x)
	beta := tensor.Sigmoid(bIn)                                             // [B, S, Hv]
	decay := tensor.Mul(tensor.Softplus(tensor.Add(aIn, d.dtBias)), d.negA) // log-decay g

	if mask.Valid() {
		// Padding must not enter the conv window (or the saved conv state).
		qkv = tensor.Where(tensor.ExpandDims(mask, -1), qkv, m.k.zero)
	}
	var convState tensor.Array
	if c != nil {
		convState = c.ConvState()
	}
	if !convState.Valid() {
		convState = tensor.Zeros(m.g, qkv.DType(), bsz, d.kernel-1, d.conC)
	}
	window := tensor.Concatenate(1, convState, qkv) // [B, K-1+S, C], oldest first
	if c != nil {
		nextConv = d.nextConvState(m, window, c, s)
	}
	conv := tensor.Silu(tensor.DepthwiseConv1d(window, d.conv)) // [B, S, C]

	q := tensor.Reshape(tensor.SliceAxis(conv, -1, 0, d.keyDim), bsz, s, d.hk, d.dk)
	k := tensor.Reshape(tensor.SliceAxis(conv, -1, d.keyDim, 2*d.keyDim), bsz, s, d.hk, d.dk)
	v := tensor.Reshape(tensor.SliceAxis(conv, -1, 2*d.keyDim, d.conC), bsz, s, d.hv, d.dv)
	// l2norm(x) = x * rsqrt(sum(x^2) + 1e-6) = RMSNorm(x, eps 1e-6/Dk) * Dk^-0.5; the
	// constant weights fold in that factor (and q's extra Dk^-0.5). m.k.qkEps is that
	// epsilon, or mlx-lm's for its checkpoints (see constants).
	q = tensor.RMSNorm(q, m.k.qScale, m.k.qkEps)
	k = tensor.RMSNorm(k, m.k.kScale, m.k.qkEps)

	if c != nil {
		state = c.SSMState()
	}
	if !state.Valid() {
		state = tensor.Zeros(m.g, tensor.Float32, bsz, d.hv, d.dv, d.dk)
	}
	var y tensor.Array
	if m.opt.OpsGatedDelta {
		y, state = gatedDeltaOps(m, q, k, v, decay, beta, state, mask)
	} else {
		y, state = tensor.GatedDelta(q, k, v, decay, beta, state, mask)
	}
	y = y.AsType(m.act)         // the recurrence runs and keeps its state in float32
	out := d.norm.Forward(y, z) // [B, S, Hv, Dv]
	return d.out.Forward(tensor.Reshape(out, bsz, s, d.valueDim)), nextConv, state
}

// project returns the conv input qkv [B, S, C] (channels [q | k | v], heads in order),
// z [B, S, Hv, Dv] and the b and a inputs [B, S, Hv]. Qwen3-Next's fused projections
// are grouped per key head, [q(Dk) k(Dk) v(r*Dv) z(r*Dv)] and [b(r) a(r)] with
// r = Hv/Hk, and are regrouped here into Qwen3.5's order (value head h = g*r + j of
// group g, which reads key head h/r, as the recurrence expects).
func (d *gatedDeltaNet) project(x tensor.Array) (qkv, z, b, a tensor.Array) {
	bsz, s := x.Dim(0), x.Dim(1)
	if d.qkvz == nil {
		z = tensor.Reshape(d.z.Forward(x), bsz, s, d.hv, d.dv)
		return d.qkv.Forward(x), z, d.b.Forward(x), d.a.Forward(x)
	}
	r := d.hv / d.hk
	rdv := r * d.dv
	g := tensor.Reshape(d.qkvz.Forward(x), bsz, s, d.hk, 2*d.dk+2*rdv)
	part := func(lo, hi, width int) tensor.Array {
		return tensor.Reshape(tensor.SliceAxis(g, -1, lo, hi), bsz, s, width)
	}
	q := part(0, d.dk, d.keyDim)
	k := part(d.dk, 2*d.dk, d.keyDim)
	v := part(2*d.dk, 2*d.dk+rdv, d.valueDim)
	z = tensor.Reshape(tensor.SliceAxis(g, -1, 2*d.dk+rdv, 2*d.dk+2*rdv), bsz, s, d.hv, d.dv)
	ba := tensor.Reshape(d.ba.Forward(x), bsz, s, d.hk, 2*r)
	b = tensor.Reshape(tensor.SliceAxis(ba, -1, 0, r), bsz, s, d.hv)
	a = tensor.Reshape(tensor.SliceAxis(ba, -1, r, 2*r), bsz, s, d.hv)
	return tensor.Concatenate(-1, q, k, v), z, b, a
}

// nextConvState returns the K-1 conv inputs the next forward needs. Normally they are
// the window's last K-1 rows; after a right-padded batched prefill (the cache holds
// prepared lengths) each row keeps the K-1 inputs ending at its own last valid token,
// window rows clip(lengths[b], 0, S) + [0 .. K-2].
func (d *gatedDeltaNet) nextConvState(m *Model, window tensor.Array, c *cache.ArraysCache, s int) tensor.Array {
	keep := d.kernel - 1
	if lengths := c.Lengths(); lengths.Valid() {
		ends := tensor.Maximum(tensor.Minimum(lengths, tensor.Scalar(m.g, float64(s), tensor.Int32)), tensor.Scalar(m.g, 0, tensor.Int32))
		steps := tensor.Arange(m.g, 0, float64(keep), 1, tensor.Int32)
		pos := tensor.Add(tensor.ExpandDims(ends, 1), tensor.ExpandDims(steps, 0)) // [B, K-1]
		return tensor.TakeAlongAxis(window, tensor.ExpandDims(pos, -1), 1)
	}
	next := tensor.SliceAxis(window, 1, s, s+keep)
	if s > keep {
		// A prompt's window is mostly the prompt: the state the cache keeps until the
		// next forward gets a buffer of its own instead of pinning the window's (50 MB
		// a layer at 2,048 tokens of Qwen3.5-0.8B). A decode step's window is one row
		// more than the state: a view, as before.
		next = tensor.Copy(next)
	}
	return next
}

// gatedDeltaOps is the recurrence as plain tensor ops, one token at a time (the --ops
// path): per step, with S [B, Hv, Dv, Dk]:
//
//	S = S * exp(g);  kv = S k;  delta = (v - kv) * beta;  S = S + delta (x) k;  y = S q
//
// A masked step keeps the old state and outputs 0. Returns y [B, T, Hv, Dv] and S.
func gatedDeltaOps(m *Model, q, k, v, g, beta, state, mask tensor.Array) (tensor.Array, tensor.Array) {
	bsz, t, hk := q.Dim(0), q.Dim(1), q.Dim(2)
	hv := v.Dim(2)
	if r := hv / hk; r > 1 {
		// Value head h reads key head h / r.
		q = repeatHeads(q, r)
		k = repeatHeads(k, r)
	}
	decay := tensor.Exp(g) // [B, T, Hv]
	ys := make([]tensor.Array, t)
	for i := 0; i < t; i++ {
		qt := tensor.ExpandDims(step(q, i), 2) // [B, Hv, 1, Dk]
		kt := tensor.ExpandDims(step(k, i), 2)
		vt := step(v, i) // [B, Hv, Dv]
		dt := tensor.Reshape(step(decay, i), bsz, hv, 1, 1)
		bt := tensor.ExpandDims(step(beta, i), -1) // [B, Hv, 1]

		s := tensor.Mul(state, dt)
		kv := tensor.Sum(tensor.Mul(s, kt), -1, false) // [B, Hv, Dv]
		delta := tensor.Mul(tensor.Sub(vt, kv), bt)
		s = tensor.Add(s, tensor.Mul(tensor.ExpandDims(delta, -1), kt))
		y := tensor.Sum(tensor.Mul(s, qt), -1, false) // [B, Hv, Dv]
		if mask.Valid() {
			mt := step(mask, i) // [B]
			s = tensor.Where(tensor.Reshape(mt, bsz, 1, 1, 1), s, state)
			y = tensor.Where(tensor.Reshape(mt, bsz, 1, 1), y, m.k.zero)
		}
		state = s
		ys[i] = tensor.ExpandDims(y, 1)
	}
	return tensor.Concatenate(1, ys...), state
}

// step views a[:, i] (dropping the time axis) of a [B, T, ...] array.
func step(a tensor.Array, i int) tensor.Array {
	return tensor.Squeeze(tensor.SliceAxis(a, 1, i, i+1), 1)
}

// repeatHeads turns [B, T, Hk, D] into [B, T, Hk*r, D], head h copied to h*r .. h*r+r-1.
func repeatHeads(a tensor.Array, r int) tensor.Array {
	sh := a.Shape()
	e := tensor.BroadcastTo(tensor.ExpandDims(a, 3), sh[0], sh[1], sh[2], r, sh[3])
	return tensor.Reshape(e, sh[0], sh[1], sh[2]*r, sh[3])
}
