package qwen35

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strings"

	"github.com/ingotml/ingot/nn/checkpoint"
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
	data, err := checkpoint.ReadMetadataFile(path)
	if err != nil {
		return nil, fmt.Errorf("qwen35: load config %s: %w", path, err)
	}
	c, err := ParseHFConfig(data)
	if err != nil {
		return nil, fmt.Errorf("qwen35: load config %s: %w", path, err)
	}
	return c, nil
}

// parse decodes an HF config (hf) or mlx-lm ModelArgs without validating it.
func parse(data []byte, hf bool) (*Config, error) {
	f, err := configFields(data)
	if err != nil {
		return nil, err
	}
	headDim, theta := 0, 100000.0 // mlx-lm's defaults
	if hf {
		headDim, theta = 256, 10000
	}
	c := &Config{}
	if err := f.common(c, headDim); err != nil {
		return nil, err
	}
	if _, ok := f.get("head_dim"); !ok && !hf && c.NumHeads > 0 {
		c.HeadDim = c.HiddenSize / c.NumHeads
	}
	// mlx-lm ignores layer_types and always uses the interval rule.
	if raw, ok := f.get("layer_types"); ok && hf {
		if c.LayerTypes, err = parseLayerTypes(raw); err != nil {
			return nil, err
		}
	} else if err := f.interval(c); err != nil {
		return nil, err
	}
	rope, err := f.object("rope_parameters")
	if err != nil {
		return nil, err
	}
	if err := ropeFields(c, f, rope, theta); err != nil {
		return nil, err
	}
	// HF and mlx-lm's qwen3_5 default norm_topk_prob to true, mlx-lm's qwen3_next to false.
	if err := f.normTopK(c, hf || c.ModelType != TypeQwen3Next); err != nil {
		return nil, err
	}
	if err := f.sparseRule(c); err != nil {
		return nil, err
	}
	if err := f.checkKnown(c.ModelType); err != nil {
		return nil, err
	}
	return c, nil
}

// sparseRule reads Qwen3-Next's mlp_only_layers and decoder_sparse_step.
func (f fields) sparseRule(c *Config) error {
	var err error
	if c.DecoderSparseStep, err = f.int("decoder_sparse_step", 0); err != nil {
		return err
	}
	raw, ok := f.get("mlp_only_layers")
	if !ok {
		return nil
	}
	var layers []json.RawMessage
	if err := json.Unmarshal(raw, &layers); err != nil {
		return cfgErr("mlp_only_layers", "want an array of layer indices, got %s", snippet(raw))
	}
	for i, r := range layers {
		v, err := fields{m: map[string]json.RawMessage{"i": r}}.int("i", 0)
		if err != nil || v < 0 || v > maxLayers {
			return cfgErr(fmt.Sprintf("mlp_only_layers[%d]", i), "want a layer index, got %s", snippet(r))
		}
		c.MLPOnlyLayers = append(c.MLPOnlyLayers, v)
	}
	return nil
}

// fields holds the raw values of a JSON object by key; a JSON null counts as absent.
type fields struct {
	prefix string // for nested objects, e.g. "rope_parameters."
	m      map[string]json.RawMessage
	own    map[string]json.RawMessage // the text model's own object (text_config when nested), whose keys must all be known
}

// configFields decodes the top-level object and overlays text_config on it.
func configFields(data []byte) (fields, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil || top == nil {
		return fields{}, cfgErr("config", "not a JSON object")
	}
	f := fields{m: top, own: top}
	nested, err := f.object("text_config")
	if err != nil {
		return fields{}, err
	}
	if nested.m != nil {
		merged := make(map[string]json.RawMessage, len(top)+len(nested.m))
		for k, v := range top {
			merged[k] = v
		}
		for k, v := range nested.m {
			merged[k] = v
		}
		f.m = merged
		f.own = nested.m
	}
	return f, nil
}

func (f fields) get(key string) (json.RawMessage, bool) {
	raw, ok := f.m[key]
	if !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, false
	}
	return raw, true
}

// snippet quotes a raw JSON value for an error message, shortened if long.
func snippet(raw json.RawMessage) string { return checkpoint.Snippet(raw) }

// object returns the nested object under key; absent gives an empty fields.
func (f fields) object(key string) (fields, error) {
	raw, ok := f.get(key)
	if !ok {
		return fields{prefix: f.prefix + key + "."}, nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return fields{}, cfgErr(f.prefix+key, "want a JSON object, got %s", snippet(raw))
	}
	return fields{prefix: f.prefix + key + ".", m: m}, nil
}

// number returns the JSON number under key; ok is false when it is absent.
func (f fields) number(key string) (n json.Number, raw json.RawMessage, ok bool, err error) {
	raw, ok = f.get(key)
	if !ok {
		return "", nil, false, nil
	}
	// Unmarshal would also take a quoted number; HF writes numbers bare.
	if raw = bytes.TrimSpace(raw); raw[0] == '"' || json.Unmarshal(raw, &n) != nil {
		return "", raw, true, cfgErr(f.prefix+key, "want a number, got %s", snippet(raw))
	}
	return n, raw, true, nil
}

// int reads an integer; 64.0 is accepted, 64.5 and out-of-range values are not.
func (f fields) int(key string, def int) (int, error) {
	n, raw, ok, err := f.number(key)
	if err != nil || !ok {
		return def, err
	}
	if v, err := n.Int64(); err == nil && int64(int(v)) == v {
		return int(v), nil
	}
	v, err := n.Float64()
	if err != nil || v != math.Trunc(v) || math.Abs(v) > 1<<53 {
		return 0, cfgErr(f.prefix+key, "want an integer, got %s", snippet(raw))
	}
	return int(v), nil
}

func (f fields) float(key string, def float64) (float64, error) {
	n, raw, ok, err := f.number(key)
	if err != nil || !ok {
		return def, err
	}
	v, err := n.Float64()
	if err != nil {
		return 0, cfgErr(f.prefix+key, "number out of range: %s", snippet(raw))
	}
	return v, nil
}

func (f fields) bool(key string, def bool) (bool, error) {
	raw, ok := f.get(key)
	if !ok {
		return def, nil
	}
	var v bool
	if err := json.Unmarshal(raw, &v); err != nil {
		return false, cfgErr(f.prefix+key, "want true or false, got %s", snippet(raw))
	}
	return v, nil
}

func (f fields) string(key string) (string, error) {
	raw, ok := f.get(key)
	if !ok {
		return "", nil
	}
	var v string
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", cfgErr(f.prefix+key, "want a string, got %s", snippet(raw))
	}
	return v, nil
}

// common reads the keys HF and mlx-lm share. headDim is the default head_dim.
func (f fields) common(c *Config, headDim int) error {
	var err error
	if c.ModelType, err = f.string("model_type"); err != nil {
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
		if *x.dst, err = f.int(x.key, x.def); err != nil {
			return err
		}
	}
	if c.RMSNormEps, err = f.float("rms_norm_eps", 1e-6); err != nil {
		return err
	}
	if c.TieWordEmbeddings, err = f.bool("tie_word_embeddings", false); err != nil {
		return err
	}
	c.AttentionBias, err = f.bool("attention_bias", false)
	return err
}

// interval derives LayerTypes from full_attention_interval (default 4).
func (f fields) interval(c *Config) error {
	every, err := f.int("full_attention_interval", 4)
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

func parseLayerTypes(raw json.RawMessage) ([]LayerType, error) {
	var names []json.RawMessage
	if err := json.Unmarshal(raw, &names); err != nil {
		return nil, cfgErr("layer_types", "want an array of strings, got %s", snippet(raw))
	}
	types := make([]LayerType, len(names))
	for i, r := range names {
		var name string
		if err := json.Unmarshal(r, &name); err != nil {
			return nil, cfgErr(fmt.Sprintf("layer_types[%d]", i), "want a string, got %s", snippet(r))
		}
		switch name {
		case "linear_attention":
			types[i] = GatedDeltaNet
		case "full_attention":
			types[i] = FullAttention
		default:
			return nil, cfgErr(fmt.Sprintf("layer_types[%d]", i), "unknown layer type %s", checkpoint.QuoteShort(name))
		}
	}
	return types, nil
}

// ropeFields reads rope_theta and partial_rotary_factor, preferring rope_parameters.
func ropeFields(c *Config, flat, rope fields, thetaDef float64) error {
	var err error
	if c.RopeTheta, err = flat.float("rope_theta", thetaDef); err != nil {
		return err
	}
	if c.RopeTheta, err = rope.float("rope_theta", c.RopeTheta); err != nil {
		return err
	}
	if c.PartialRotaryFactor, err = flat.float("partial_rotary_factor", 0.25); err != nil {
		return err
	}
	c.PartialRotaryFactor, err = rope.float("partial_rotary_factor", c.PartialRotaryFactor)
	return err
}

// normTopK sets NormTopKProb for MoE models. Qwen3.5-MoE renormalises
// unconditionally, whatever the file says; other models read norm_topk_prob.
func (f fields) normTopK(c *Config, def bool) error {
	if c.NumExperts <= 0 {
		return nil
	}
	if strings.HasPrefix(c.ModelType, "qwen3_5") {
		c.NormTopKProb = true
		return nil
	}
	var err error
	c.NormTopKProb, err = f.bool("norm_topk_prob", def)
	return err
}

// Validate checks that the configuration describes a buildable model and
