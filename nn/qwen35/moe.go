package qwen35

import (
	"fmt"

	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/tensor"
)

// sparseMoE is the Qwen3.5-MoE feed-forward block: a softmax router over all experts,
// the top-k experts per token weighted by their (renormalised) router probabilities,
// plus a shared SwiGLU expert scaled by sigmoid(shared_expert_gate(x)).
type sparseMoE struct {
	gate       nn.LinearLayer // [E, H]
	experts    nn.ExpertsLayer
	shared     *nn.MLP
	sharedGate nn.LinearLayer // [1, H]
	topK       int
	renorm     bool
}

func newSparseMoE(b *nn.Builder, cfg *Config, p string) *sparseMoE {
	h, e, i := cfg.HiddenSize, cfg.NumExperts, cfg.MoEIntermediateSize
	// The router first: a random model draws its weights in build order.
	gate := b.Linear(p+"gate", e, h, false)
	var experts nn.ExpertsLayer
	gq, quantized := b.Quantized(p+"experts.gate_proj", e, i, h)
	if quantized {
		uq, uok := b.Quantized(p+"experts.up_proj", e, i, h)
		dq, dok := b.Quantized(p+"experts.down_proj", e, h, i)
		if !uok || !dok {
			b.Fail(fmt.Errorf("qwen35: %sexperts: gate_proj is quantized but up_proj or down_proj is not (experts with mixed quantization are not supported)", p))
		}
		experts = &nn.QuantizedSwitchGLU{Gate: gq, Up: uq, Down: dq}
	} else {
		experts = &nn.SwitchGLU{
			Gate: b.Array(p+"experts.gate_proj", nn.KindExperts, e, i, h),
			Up:   b.Array(p+"experts.up_proj", nn.KindExperts, e, i, h),
			Down: b.Array(p+"experts.down_proj", nn.KindExperts, e, h, i),
		}
	}
	return &sparseMoE{
		gate:       gate,
		experts:    experts,
		shared:     b.MLP(p+"shared_expert.", h, cfg.SharedExpertIntermediateSize),
		sharedGate: b.Linear(p+"shared_expert_gate", 1, h, false),
		topK:       cfg.NumExpertsPerTok,
		renorm:     cfg.NormTopKProb,
	}
}

// forward maps x [..., H] to [..., H].
func (s *sparseMoE) forward(x tensor.Array) tensor.Array {
	probs := tensor.Softmax(s.gate.Forward(x), -1) // [..., E], float32
	idx := tensor.ArgTopK(probs, s.topK)
	scores := tensor.TakeAlongAxis(probs, idx, -1)
	if s.renorm {
		scores = tensor.Div(scores, tensor.Sum(scores, -1, true))
	}
	y := s.experts.Forward(x, idx, scores)
	shared := tensor.Mul(s.shared.Forward(x), tensor.Sigmoid(s.sharedGate.Forward(x)))
	return tensor.Add(y, shared)
}
