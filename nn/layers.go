package nn

import (
	"github.com/ingotml/ingot/tensor"
)

// LinearLayer is any layer that maps x [..., in] to [..., out]: the plain Linear
// here, and quantized layers that keep their packed weights on the device.
type LinearLayer interface {
	Forward(x tensor.Array) tensor.Array
}

// EmbeddingLayer looks up rows of a [vocab, dim] table, and projects onto it when
// the table doubles as a tied output head.
type EmbeddingLayer interface {
	Forward(ids tensor.Array) tensor.Array
	AsLinear(x tensor.Array) tensor.Array
}

var (
	_ LinearLayer    = (*Linear)(nil)
	_ EmbeddingLayer = (*Embedding)(nil)
)

// Linear is a dense layer: y = x @ Weight^T (+ Bias). Weight is [out, in], the layout
// Hugging Face and MLX checkpoints store.
type Linear struct {
	Weight tensor.Array // [out, in]
	Bias   tensor.Array // [out], or invalid (Array{}) for no bias
}

// Forward maps x [..., in] to [..., out].
func (l *Linear) Forward(x tensor.Array) tensor.Array {
	y := tensor.Linear(x, l.Weight)
	if l.Bias.Valid() {
		y = tensor.Add(y, l.Bias)
	}
	return y
}

// Embedding looks up rows of a [vocab, dim] table.
type Embedding struct {
	Weight tensor.Array // [vocab, dim]
}

// Forward maps int32 ids of any shape to ids.shape + [dim].
func (e *Embedding) Forward(ids tensor.Array) tensor.Array {
	return tensor.Take(e.Weight, ids, 0)
}

// AsLinear projects x [..., dim] onto the table: [..., vocab] (a tied output head).
func (e *Embedding) AsLinear(x tensor.Array) tensor.Array {
	return tensor.Linear(x, e.Weight)
}

// RMSNorm normalises the last axis: x * rsqrt(mean(x^2) + Eps) * Weight. Zero-centred
// checkpoints (weight stored as w with the scale 1 + w) must be given 1 + w here.
type RMSNorm struct {
	Weight tensor.Array // [dim], or invalid for no scale
	Eps    float64
}

// Forward normalises x [..., dim].
func (n *RMSNorm) Forward(x tensor.Array) tensor.Array {
	return tensor.RMSNorm(x, n.Weight, n.Eps)
}

// GatedRMSNorm is RMSNorm(x) * silu(z), Weight used as stored (Qwen3.5's linear_attn.norm).
type GatedRMSNorm struct {
	Weight tensor.Array // [dim]
	Eps    float64
}

// Forward normalises x [..., dim] and gates it with z of the same shape.
func (n *GatedRMSNorm) Forward(x, z tensor.Array) tensor.Array {
	return tensor.GatedRMSNorm(x, z, n.Weight, n.Eps)
}

// RoPE rotates the first Dims features of each head (rotate-half pairing) by the
// token's position; the remaining features pass through.
type RoPE struct {
	Dims int     // rotated features per head (even)
	Base float64 // theta base, e.g. 10000
}

// Forward rotates x [B, H, S, D]; row b's token s sits at position offsets[b] + s
// (offsets int32 [B]).
func (r *RoPE) Forward(x, offsets tensor.Array) tensor.Array {
	return tensor.RoPE(x, r.Dims, r.Base, offsets)
}

// MLP is the SwiGLU feed-forward block: Down(silu(Gate x) * Up x).
type MLP struct {
	Gate, Up, Down LinearLayer
}

// Forward maps x [..., dim] to [..., dim].
func (m *MLP) Forward(x tensor.Array) tensor.Array {
	h := tensor.Mul(tensor.Silu(m.Gate.Forward(x)), m.Up.Forward(x))
	return m.Down.Forward(h)
}

// SwitchGLU is a bank of E SwiGLU experts with stacked weights, evaluated only for the
// experts each token is routed to (one gathered matmul per projection).
type SwitchGLU struct {
	Gate tensor.Array // [E, I, H]
	Up   tensor.Array // [E, I, H]
	Down tensor.Array // [E, H, I]
}

// Forward runs token t through experts idx[t, :] and mixes their outputs with
// scores[t, :]: x [..., H], idx int32 [..., k], scores [..., k] -> [..., H].
func (s *SwitchGLU) Forward(x, idx, scores tensor.Array) tensor.Array {
	// One fused kernel (tensor.SwitchGLU) instead of gather_mm, silu, mul, gather_mm,
	// mul and sum with their reshapes: about a dozen fewer nodes per layer and token.
	// The kernel computes in float32; the result takes x's dtype, as MLX's gather_mm
	// chain would.
	y := tensor.SwitchGLU(x, s.Gate, s.Up, s.Down, idx, scores)
	if dt := x.DType(); dt.IsFloat() && dt != y.DType() {
		y = y.AsType(dt)
	}
	return y
}
