package qwen35

import (
	"cmp"

	"github.com/ingotml/ingot/nn"
)

// ReproConfig returns the random qwen3_5_moe model the MLX leak repro builds:
// vocab 128, 4 heads / 2 kv heads of dim 16, Hk 2, Hv 4, Dk = Dv = 16, conv
// kernel 4, top-2 routing over experts of width 32 plus a shared expert of
// width 32, rope_theta 10000, partial_rotary_factor 0.25, eps 1e-6. ModelType
// qwen3_5 makes every MLP dense (width 64, no experts); qwen3_next keeps the experts
// (every layer sparse, norm_topk_prob true) and uses its fused GDN projections.
func ReproConfig(o nn.ReproOptions) (*Config, error) {
	for _, x := range []sizeField{{"Layers", o.Layers}, {"Interval", o.Interval}, {"Experts", o.Experts}, {"Hidden", o.Hidden}} {
		if x.v < 0 {
			return nil, cfgErr(x.key, "must not be negative, got %d", x.v)
		}
	}
	typ := cmp.Or(o.ModelType, TypeQwen35MoE)
	switch typ {
	case TypeQwen35MoE, TypeQwen35, TypeQwen3Next, TypeQwen35Text, TypeQwen35MoEText:
	default:
		return nil, cfgErr("ModelType", "the repro builds %s, %s or %s, not %s", TypeQwen35MoE, TypeQwen35, TypeQwen3Next, nn.Quote(o.ModelType))
	}
	layers := cmp.Or(o.Layers, 50)
	if layers > maxLayers {
		return nil, cfgErr("Layers", "%d exceeds the limit of %d", layers, maxLayers)
	}
	every := cmp.Or(o.Interval, layers)
	if o.AttentionOnly {
		every = 1
	}
	c := &Config{
		ModelType:                    typ,
		VocabSize:                    128,
		HiddenSize:                   cmp.Or(o.Hidden, 64),
		NumLayers:                    layers,
		NumHeads:                     4,
		NumKVHeads:                   2,
		HeadDim:                      16,
		LinearNumKeyHeads:            2,
		LinearNumValueHeads:          4,
		LinearKeyHeadDim:             16,
		LinearValueHeadDim:           16,
		LinearConvKernel:             4,
		RMSNormEps:                   1e-6,
		LayerTypes:                   intervalLayers(layers, every),
		RopeTheta:                    10000,
		PartialRotaryFactor:          0.25,
		NumExperts:                   cmp.Or(o.Experts, 8),
		NumExpertsPerTok:             2,
		MoEIntermediateSize:          32,
		SharedExpertIntermediateSize: 32,
		NormTopKProb:                 true,
	}
	if typ == TypeQwen3Next {
		c.DecoderSparseStep = 1
	}
	if typ == TypeQwen35 || typ == TypeQwen35Text { // the _text types: the same layers, text only
		c.NumExperts, c.NumExpertsPerTok, c.MoEIntermediateSize, c.SharedExpertIntermediateSize = 0, 0, 0, 0
		c.NormTopKProb = false
		c.IntermediateSize = 64
	}
	return validated(c, nil)
}
