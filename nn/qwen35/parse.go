package qwen35

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/ingotml/ingot/nn"
)

// This file reads config.json (HF) and mlx-lm ModelArgs JSON into a Config; config.go
// validates it, repro.go makes the leak repro's config.

// ParseHFConfig parses and validates a Hugging Face config.json. Keys may be
// at the top level or nested under "text_config" (nested keys win). Layer
// kinds come from layer_types, else from full_attention_interval (default 4);
// rope_theta and partial_rotary_factor from rope_parameters, else flat keys.
// Absent keys take HF's defaults: head_dim 256, rope_theta 10000,
// partial_rotary_factor 0.25, rms_norm_eps 1e-6.
func ParseHFConfig(data []byte) (*Config, error) { return validated(parse(data, true)) }

// ParseModelArgs parses and validates mlx-lm ModelArgs JSON: the same key
// names, flat, with layer kinds from full_attention_interval (default 4).
// It follows mlx-lm's defaults: head_dim = hidden_size / num_attention_heads,
// rope_theta 100000, partial_rotary_factor 0.25, rms_norm_eps 1e-6.
func ParseModelArgs(data []byte) (*Config, error) { return validated(parse(data, false)) }

func validated(c *Config, err error) (*Config, error) {
	if err == nil {
		err = c.Validate()
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// LoadConfig reads and validates an HF config.json; errors name the file and
// wrap the underlying *ConfigError or I/O error.
func LoadConfig(path string) (*Config, error) {
	return nn.LoadConfig(family, path, ParseHFConfig)
}

// parse decodes an HF config (hf) or mlx-lm ModelArgs without validating it.
func parse(data []byte, hf bool) (*Config, error) {
	f, err := nn.ReadConfigFields(family, data)
	if err != nil {
		return nil, err
	}
	headDim, theta := 0, 100000.0 // mlx-lm's defaults
	if hf {
		headDim, theta = 256, 10000
	}
	c := &Config{}
	if err := common(f, c, headDim); err != nil {
		return nil, err
	}
	if _, ok := f.Get("head_dim"); !ok && !hf && c.NumHeads > 0 {
		c.HeadDim = c.HiddenSize / c.NumHeads
	}
	// mlx-lm ignores layer_types and always uses the interval rule.
	names, ok, err := f.Strings("layer_types")
	if ok && hf {
		if err != nil {
			return nil, err
		}
		if c.LayerTypes, err = parseLayerTypes(names); err != nil {
			return nil, err
		}
	} else if err := interval(f, c); err != nil {
		return nil, err
	}
	rope, err := f.Object("rope_parameters")
	if err != nil {
		return nil, err
	}
	if err := ropeFields(c, f, rope, theta); err != nil {
		return nil, err
	}
	// HF and mlx-lm's qwen3_5 default norm_topk_prob to true, mlx-lm's qwen3_next to false.
	if err := normTopK(f, c, hf || c.ModelType != TypeQwen3Next); err != nil {
		return nil, err
	}
	if err := sparseRule(f, c); err != nil {
		return nil, err
	}
	if err := checkKnown(f, c.ModelType); err != nil {
		return nil, err
	}
	return c, nil
}

// sparseRule reads Qwen3-Next's mlp_only_layers and decoder_sparse_step.
func sparseRule(f nn.ConfigFields, c *Config) error {
	var err error
	if c.DecoderSparseStep, err = f.Int("decoder_sparse_step", 0); err != nil {
		return err
	}
	raw, ok := f.Get("mlp_only_layers")
	if !ok {
		return nil
	}
	var layers []json.RawMessage
	if err := json.Unmarshal(raw, &layers); err != nil {
		return cfgErr("mlp_only_layers", "want an array of layer indices, got %s", nn.Snippet(raw))
	}
	for i, r := range layers {
		v, ok := nn.ParseInt(r)
		if !ok || v < 0 || v > maxLayers {
			return cfgErr(fmt.Sprintf("mlp_only_layers[%d]", i), "want a layer index, got %s", nn.Snippet(r))
		}
		c.MLPOnlyLayers = append(c.MLPOnlyLayers, v)
	}
	return nil
}

// common reads the keys HF and mlx-lm share. headDim is the default head_dim.
func common(f nn.ConfigFields, c *Config, headDim int) error {
	var err error
	if c.ModelType, err = f.String("model_type", ""); err != nil {
		return err
	}
	ints := []struct {
		key string
		dst *int
		def int
	}{
		{"vocab_size", &c.VocabSize, 0},
		{"hidden_size", &c.HiddenSize, 0},
		{"num_hidden_layers", &c.NumLayers, 0},
		{"num_attention_heads", &c.NumHeads, 0},
		{"num_key_value_heads", &c.NumKVHeads, 0},
		{"head_dim", &c.HeadDim, headDim},
		{"linear_num_key_heads", &c.LinearNumKeyHeads, 0},
		{"linear_num_value_heads", &c.LinearNumValueHeads, 0},
		{"linear_key_head_dim", &c.LinearKeyHeadDim, 0},
		{"linear_value_head_dim", &c.LinearValueHeadDim, 0},
		{"linear_conv_kernel_dim", &c.LinearConvKernel, 0},
		{"intermediate_size", &c.IntermediateSize, 0},
		{"num_experts", &c.NumExperts, 0},
		{"num_experts_per_tok", &c.NumExpertsPerTok, 0},
		{"moe_intermediate_size", &c.MoEIntermediateSize, 0},
		{"shared_expert_intermediate_size", &c.SharedExpertIntermediateSize, 0},
	}
	for _, x := range ints {
		if *x.dst, err = f.Int(x.key, x.def); err != nil {
			return err
		}
	}
	if c.RMSNormEps, err = f.Float("rms_norm_eps", 1e-6); err != nil {
		return err
	}
	if c.TieWordEmbeddings, err = f.Bool("tie_word_embeddings", false); err != nil {
		return err
	}
	c.AttentionBias, err = f.Bool("attention_bias", false)
	return err
}

// interval derives LayerTypes from full_attention_interval (default 4).
func interval(f nn.ConfigFields, c *Config) error {
	every, err := f.Int("full_attention_interval", 4)
	if err != nil {
		return err
	}
	if every < 1 {
		return cfgErr("full_attention_interval", "must be positive, got %d", every)
	}
	if c.NumLayers > maxLayers {
		return cfgErr("num_hidden_layers", "%d exceeds the limit of %d", c.NumLayers, maxLayers)
	}
	c.LayerTypes = intervalLayers(c.NumLayers, every)
	return nil
}

// intervalLayers applies mlx-lm's rule: layer i attends iff (i+1) % every == 0.
func intervalLayers(n, every int) []LayerType {
	types := make([]LayerType, max(n, 0))
	for i := range types {
		types[i] = GatedDeltaNet
		if (i+1)%every == 0 {
			types[i] = FullAttention
		}
	}
	return types
}

func parseLayerTypes(names []string) ([]LayerType, error) {
	types := make([]LayerType, len(names))
	for i, name := range names {
		switch name {
		case "linear_attention":
			types[i] = GatedDeltaNet
		case "full_attention":
			types[i] = FullAttention
		default:
			return nil, cfgErr(fmt.Sprintf("layer_types[%d]", i), "unknown layer type %s", nn.Quote(name))
		}
	}
	return types, nil
}

// ropeFields reads rope_theta and partial_rotary_factor, preferring rope_parameters.
func ropeFields(c *Config, flat, rope nn.ConfigFields, thetaDef float64) error {
	var err error
	if c.RopeTheta, err = flat.Float("rope_theta", thetaDef); err != nil {
		return err
	}
	if c.RopeTheta, err = rope.Float("rope_theta", c.RopeTheta); err != nil {
		return err
	}
	if c.PartialRotaryFactor, err = flat.Float("partial_rotary_factor", 0.25); err != nil {
		return err
	}
	c.PartialRotaryFactor, err = rope.Float("partial_rotary_factor", c.PartialRotaryFactor)
	return err
}

// normTopK sets NormTopKProb for MoE models. Qwen3.5-MoE renormalises
// unconditionally, whatever the file says; other models read norm_topk_prob.
func normTopK(f nn.ConfigFields, c *Config, def bool) error {
	if c.NumExperts <= 0 {
		return nil
	}
	if strings.HasPrefix(c.ModelType, "qwen3_5") {
		c.NormTopKProb = true
		return nil
	}
	var err error
	c.NormTopKProb, err = f.Bool("norm_topk_prob", def)
	return err
}

// Validate checks that the configuration describes a buildable model and
