package qwen35

import (
	"math"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/tensor"
)

// attention is a gated full-attention layer: q_proj yields per head [query | gate],
// q and k are RMS-normalised per head and rotated on their first RotaryDims features,
// attention is causal with grouped KV heads, and the result is gated by sigmoid(gate).
type attention struct {
	q, k, v, o   nn.LinearLayer
	qNorm, kNorm nn.RMSNorm // zero-centred: weights hold 1 + w
	rope         nn.RoPE
	nh, nkv, hd  int
	scale        float64
}

func newAttention(b *nn.Builder, cfg *Config, p string) *attention {
	h, nh, nkv, hd := cfg.HiddenSize, cfg.NumHeads, cfg.NumKVHeads, cfg.HeadDim
	eps := cfg.RMSNormEps
	bias := cfg.AttentionBias
	return &attention{
		q:     b.Linear(p+"q_proj", nh*hd*2, h, bias),
		k:     b.Linear(p+"k_proj", nkv*hd, h, bias),
		v:     b.Linear(p+"v_proj", nkv*hd, h, bias),
		o:     b.Linear(p+"o_proj", h, nh*hd, bias),
		qNorm: b.Norm(p+"q_norm.weight", nn.KindCentredNorm, hd, eps),
		kNorm: b.Norm(p+"k_norm.weight", nn.KindCentredNorm, hd, eps),
		rope:  nn.RoPE{Dims: cfg.RotaryDims(), Base: cfg.RopeTheta},
		nh:    nh, nkv: nkv, hd: hd,
		scale: 1 / math.Sqrt(float64(hd)),
	}
}

// forward maps x [B, S, H] to [B, S, H]. c is the layer's cache, or nil for a
// cache-free forward; the RoPE offsets are read from it before it is updated.
func (a *attention) forward(x, mask tensor.Array, c cache.Attention) tensor.Array {
	bsz, s := x.Dim(0), x.Dim(1)
	qg := tensor.Reshape(a.q.Forward(x), bsz, s, a.nh, 2*a.hd)
	q := tensor.SliceAxis(qg, -1, 0, a.hd)
	gate := tensor.Reshape(tensor.SliceAxis(qg, -1, a.hd, 2*a.hd), bsz, s, a.nh*a.hd)
	k := tensor.Reshape(a.k.Forward(x), bsz, s, a.nkv, a.hd)
	v := tensor.Reshape(a.v.Forward(x), bsz, s, a.nkv, a.hd)

	q = tensor.Transpose(a.qNorm.Forward(q), 0, 2, 1, 3) // [B, nh, S, hd]
	k = tensor.Transpose(a.kNorm.Forward(k), 0, 2, 1, 3)
	v = tensor.Transpose(v, 0, 2, 1, 3)

	out := nn.Attend(q, k, v, a.rope, a.scale, mask, c)
	return a.o.Forward(tensor.Mul(out, tensor.Sigmoid(gate)))
}
