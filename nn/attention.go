package nn

import (
	"math"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/tensor"
)

// SelfAttention is causal softmax attention with grouped KV heads, q and k
// RMS-normalised per head and rotated by RoPE, as Qwen3 and Qwen3.5 have it. Gated
// (Qwen3.5): q_proj yields per head [query | gate], and the heads' output is scaled by
// sigmoid(gate) before o_proj.
type SelfAttention struct {
	Q, K, V, O              LinearLayer
	QNorm, KNorm            RMSNorm
	RoPE                    RoPE
	Heads, KVHeads, HeadDim int
	Scale                   float64
	Gated                   bool
}

// AttentionShape is what Builder.SelfAttention needs of a configuration.
type AttentionShape struct {
	Hidden, Heads, KVHeads, HeadDim int
	Bias                            bool    // q, k, v and o have biases
	Gated                           bool    // see SelfAttention
	Norm                            Kind    // the q/k norms' kind (KindNorm or KindCentredNorm)
	Eps                             float64 // the q/k norms' epsilon
	RoPE                            RoPE
}

// SelfAttention makes the attention layer under prefix: q_proj, k_proj, v_proj, o_proj,
// q_norm and k_norm, drawn in that order; the scores are scaled by 1/sqrt(HeadDim).
func (b *Builder) SelfAttention(prefix string, s AttentionShape) *SelfAttention {
	q := s.Heads * s.HeadDim
	if s.Gated {
		q *= 2
	}
	return &SelfAttention{
		Q:     b.Linear(prefix+"q_proj", q, s.Hidden, s.Bias),
		K:     b.Linear(prefix+"k_proj", s.KVHeads*s.HeadDim, s.Hidden, s.Bias),
		V:     b.Linear(prefix+"v_proj", s.KVHeads*s.HeadDim, s.Hidden, s.Bias),
		O:     b.Linear(prefix+"o_proj", s.Hidden, s.Heads*s.HeadDim, s.Bias),
		QNorm: b.Norm(prefix+"q_norm.weight", s.Norm, s.HeadDim, s.Eps),
		KNorm: b.Norm(prefix+"k_norm.weight", s.Norm, s.HeadDim, s.Eps),
		RoPE:  s.RoPE, Heads: s.Heads, KVHeads: s.KVHeads, HeadDim: s.HeadDim, Scale: 1 / math.Sqrt(float64(s.HeadDim)), Gated: s.Gated,
	}
}

// Forward maps x [B, S, H] to [B, S, H]. c is the layer's cache, or nil for a
// cache-free forward; the RoPE offsets are read from it before k and v are added.
func (a *SelfAttention) Forward(x, mask tensor.Array, c cache.Attention) tensor.Array {
	bsz, s, nh, hd := x.Dim(0), x.Dim(1), a.Heads, a.HeadDim
	var q, gate tensor.Array
	if a.Gated {
		qg := tensor.Reshape(a.Q.Forward(x), bsz, s, nh, 2*hd)
		q = tensor.SliceAxis(qg, -1, 0, hd)
		gate = tensor.Reshape(tensor.SliceAxis(qg, -1, hd, 2*hd), bsz, s, nh*hd)
	} else {
		q = tensor.Reshape(a.Q.Forward(x), bsz, s, nh, hd)
	}
	k := tensor.Reshape(a.K.Forward(x), bsz, s, a.KVHeads, hd)
	v := tensor.Reshape(a.V.Forward(x), bsz, s, a.KVHeads, hd)
	q = tensor.Transpose(a.QNorm.Forward(q), 0, 2, 1, 3) // [B, nh, S, hd]
	k = tensor.Transpose(a.KNorm.Forward(k), 0, 2, 1, 3)
	v = tensor.Transpose(v, 0, 2, 1, 3)

	var offsets tensor.Array
	if c != nil {
		offsets = c.Offsets(bsz)
	} else {
		offsets = tensor.Zeros(x.Graph(), tensor.Int32, bsz)
	}
	q = a.RoPE.Forward(q, offsets)
	k = a.RoPE.Forward(k, offsets)
	keys, values := k, v
	if c != nil {
		keys, values = c.UpdateAndFetch(k, v)
	}
	out := tensor.SDPA(q, keys, values, a.Scale, mask) // [B, nh, S, hd]
	out = tensor.Reshape(tensor.Transpose(out, 0, 2, 1, 3), bsz, s, nh*hd)
	if a.Gated {
		out = tensor.Mul(out, tensor.Sigmoid(gate))
	}
	return a.O.Forward(out)
}
