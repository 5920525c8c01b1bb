package nn

import (
	"github.com/ingotml/ingot/tensor"
)

// Quantized layers keep MLX's packed weights on the device and run the quant kernels on
// them (kernels/quant.go): no float copy of a weight is ever made. Activations are float32.

// ExpertsLayer runs routed tokens through a bank of experts: SwitchGLU and
// QuantizedSwitchGLU.
type ExpertsLayer interface {
	Forward(x, idx, scores tensor.Array) tensor.Array
}

var (
	_ LinearLayer    = (*QuantizedLinear)(nil)
	_ EmbeddingLayer = (*QuantizedEmbedding)(nil)
	_ ExpertsLayer   = (*QuantizedSwitchGLU)(nil)
	_ ExpertsLayer   = (*SwitchGLU)(nil)
)

// QuantizedLinear is Linear with an affine-quantized weight [out, in].
type QuantizedLinear struct {
	tensor.QuantizedWeight
	Bias tensor.Array // [out], or invalid for no bias
}

// Forward maps x [..., in] to float32 [..., out].
func (l *QuantizedLinear) Forward(x tensor.Array) tensor.Array {
	y := tensor.QuantizedMatmul(x, l.QuantizedWeight)
	if l.Bias.Valid() {
		y = tensor.Add(y, l.Bias.AsType(tensor.Float32))
	}
	return y
}

// QuantizedEmbedding is Embedding with an affine-quantized [vocab, dim] table.
type QuantizedEmbedding struct {
	tensor.QuantizedWeight
}

// Forward dequantizes the rows of int32 ids (any shape) into float32 ids.shape + [dim].
// Negative ids wrap; an id outside [-vocab, vocab) fails the evaluation, as Take does.
func (e *QuantizedEmbedding) Forward(ids tensor.Array) tensor.Array {
	return tensor.QuantizedTake(e.QuantizedWeight, ids)
}

// AsLinear projects x [..., dim] onto the quantized table: float32 [..., vocab] (a tied
// output head reading the embedding's packed matrix).
func (e *QuantizedEmbedding) AsLinear(x tensor.Array) tensor.Array {
	return tensor.QuantizedMatmul(x, e.QuantizedWeight)
}

// QuantizedSwitchGLU is SwitchGLU with quantized stacked experts: Gate and Up
// [E, I, H], Down [E, H, I] (mlx-lm's switch_mlp layout).
type QuantizedSwitchGLU struct {
	Gate, Up, Down tensor.QuantizedWeight
}

// Forward runs token t through experts idx[t, :] and mixes their outputs with
// scores[t, :]: x [..., H], idx int32 [..., k], scores [..., k] -> float32 [..., H].
// One fused kernel, as SwitchGLU.
func (s *QuantizedSwitchGLU) Forward(x, idx, scores tensor.Array) tensor.Array {
	return tensor.QuantizedSwitchGLU(x, idx, scores, s.Gate, s.Up, s.Down)
}
