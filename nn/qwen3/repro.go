package qwen3

import (
	"cmp"

	"github.com/ingotml/ingot/nn"
)

// ReproConfig returns the leak repro's random Qwen3 model: the control, every layer
// attention. It has the repro's attention sizes (vocab 128, 4 heads / 2 kv heads of
// dim 16, rope_theta 10000, eps 1e-6) and a dense MLP of width 64; o.Layers (default
// 50) and o.Hidden (default 64) apply, o.Interval, o.Experts and o.AttentionOnly do
// not (every layer attends and no MLP is sparse).
func ReproConfig(o nn.ReproOptions) (*Config, error) {
	if o.ModelType != "" && o.ModelType != TypeQwen3 {
		return nil, cfgErr("ModelType", "this package builds %q, not %s", TypeQwen3, nn.Quote(o.ModelType))
	}
	for _, x := range []struct {
		key string
		v   int
	}{{"Layers", o.Layers}, {"Hidden", o.Hidden}} {
		if x.v < 0 {
			return nil, cfgErr(x.key, "must not be negative, got %d", x.v)
		}
	}
	c := &Config{
		ModelType:        TypeQwen3,
		VocabSize:        128,
		HiddenSize:       cmp.Or(o.Hidden, 64),
		IntermediateSize: 64,
		NumLayers:        cmp.Or(o.Layers, 50),
		NumHeads:         4,
		NumKVHeads:       2,
		HeadDim:          16,
		RMSNormEps:       1e-6,
		RopeTheta:        10000,
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}
