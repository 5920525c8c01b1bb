package qwen3

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"

	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/checkpoint"
)

// TypeQwen3 is the model_type this package builds.
const TypeQwen3 = "qwen3"

// Limits that keep hostile configs from driving huge allocations or integer overflow
// further down; real models are orders of magnitude below them.
const (
	maxLayers = 1 << 16
	maxDim    = 1 << 24
)

// Config is the architecture of a dense Qwen3 model. Field comments give the HF
// config.json key.
type Config struct {
	ModelType         string  // model_type: TypeQwen3
	VocabSize         int     // vocab_size
	HiddenSize        int     // hidden_size
	IntermediateSize  int     // intermediate_size (the MLP's width)
	NumLayers         int     // num_hidden_layers
	NumHeads          int     // num_attention_heads
	NumKVHeads        int     // num_key_value_heads
	HeadDim           int     // head_dim
	RMSNormEps        float64 // rms_norm_eps
	RopeTheta         float64 // rope_parameters.rope_theta, or rope_theta
	TieWordEmbeddings bool    // tie_word_embeddings: no lm_head, the embedding projects
	AttentionBias     bool    // attention_bias: q/k/v/o projections have biases
}

// ErrConfig is wrapped by every *ConfigError.
var ErrConfig = errors.New("invalid config")

// ConfigError reports one config.json field that is missing, mistyped, out of range
// or asks for something this package does not build.
type ConfigError struct {
	Key    string
	Reason string
}

// Error formats the error as "qwen3: config: <key>: <reason>".
func (e *ConfigError) Error() string { return fmt.Sprintf("qwen3: config: %s: %s", e.Key, e.Reason) }

// Unwrap returns ErrConfig.
func (e *ConfigError) Unwrap() error { return ErrConfig }

func cfgErr(key, format string, args ...any) error {
	// The key may come from the file: a long one is cut.
	return &ConfigError{Key: checkpoint.Short(key), Reason: fmt.Sprintf(format, args...)}
}

// ParseHFConfig parses and validates a Hugging Face config.json. Keys may be at the
// top level or nested under "text_config" (nested keys win). Absent keys take
// transformers' Qwen3Config defaults: num_key_value_heads = num_attention_heads,
// head_dim 128, rms_norm_eps 1e-6, rope_theta 10000, untied embeddings, no biases.
// Options this package does not build (sliding windows, rope scaling, another
// activation, a recurrent layer type) are refused.
func ParseHFConfig(data []byte) (*Config, error) {
	f, err := configFields(data)
	if err != nil {
		return nil, err
	}
	c := &Config{}
	if c.ModelType, err = f.str("model_type", TypeQwen3); err != nil {
		return nil, err
	}
	ints := []struct {
		key string
		dst *int
		def int // -1: required
	}{
		{"vocab_size", &c.VocabSize, -1},
		{"hidden_size", &c.HiddenSize, -1},
		{"intermediate_size", &c.IntermediateSize, -1},
		{"num_hidden_layers", &c.NumLayers, -1},
		{"num_attention_heads", &c.NumHeads, -1},
		{"num_key_value_heads", &c.NumKVHeads, 0},
		{"head_dim", &c.HeadDim, 128},
	}
	for _, x := range ints {
		if *x.dst, err = f.int(x.key, x.def); err != nil {
			return nil, err
		}
	}
	c.NumKVHeads = cmp.Or(c.NumKVHeads, c.NumHeads)
	if c.RMSNormEps, err = f.float(f.m, "rms_norm_eps", 1e-6); err != nil {
		return nil, err
	}
	if c.TieWordEmbeddings, err = f.bool("tie_word_embeddings"); err != nil {
		return nil, err
	}
	if c.AttentionBias, err = f.bool("attention_bias"); err != nil {
		return nil, err
	}
	if err := f.rope(c); err != nil {
		return nil, err
	}
	if err := f.unsupported(c.NumLayers); err != nil {
		return nil, err
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// LoadConfig reads and validates an HF config.json; errors name the file and wrap the
// underlying *ConfigError or I/O error.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("qwen3: load config %s: %w", path, err)
	}
	c, err := ParseHFConfig(data)
	if err != nil {
		return nil, fmt.Errorf("qwen3: load config %s: %w", path, err)
	}
	return c, nil
}

// Validate checks every size and constant the model is built from.
func (c *Config) Validate() error {
	if c.ModelType != TypeQwen3 {
		return cfgErr("model_type", "this package builds %q, not %s", TypeQwen3, checkpoint.QuoteShort(c.ModelType))
	}
	for _, x := range []struct {
		key   string
		v, hi int
	}{
		{"vocab_size", c.VocabSize, maxDim}, {"hidden_size", c.HiddenSize, maxDim},
		{"intermediate_size", c.IntermediateSize, maxDim}, {"num_hidden_layers", c.NumLayers, maxLayers},
		{"num_attention_heads", c.NumHeads, maxDim}, {"num_key_value_heads", c.NumKVHeads, maxDim},
		{"head_dim", c.HeadDim, maxDim},
	} {
		if x.v < 1 || x.v > x.hi {
			return cfgErr(x.key, "must be in [1, %d], got %d", x.hi, x.v)
		}
	}
	switch {
	case c.NumHeads%c.NumKVHeads != 0:
		return cfgErr("num_key_value_heads", "must divide num_attention_heads=%d, got %d", c.NumHeads, c.NumKVHeads)
	case c.HeadDim%2 != 0:
		return cfgErr("head_dim", "must be even (rotary pairs), got %d", c.HeadDim)
	case c.NumHeads*c.HeadDim > maxDim:
		return cfgErr("head_dim", "num_attention_heads x head_dim = %d exceeds %d", c.NumHeads*c.HeadDim, maxDim)
	case !(c.RMSNormEps > 0) || math.IsInf(c.RMSNormEps, 0):
		return cfgErr("rms_norm_eps", "must be a finite number > 0, got %v", c.RMSNormEps)
	case !(c.RopeTheta > 0) || math.IsInf(c.RopeTheta, 0):
		return cfgErr("rope_theta", "must be a finite number > 0, got %v", c.RopeTheta)
	}
	return nil
}

// Kinds returns each layer's mixer kind: all attention.
func (c *Config) Kinds() []nn.LayerKind {
	k := make([]nn.LayerKind, c.NumLayers)
	for i := range k {
		k[i] = nn.Attention
	}
	return k
}

// MarshalHF writes c as a flat Hugging Face config.json, which ParseHFConfig reads back
// to an equal Config.
func (c *Config) MarshalHF() ([]byte, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	types := make([]string, c.NumLayers)
	for i, k := range c.Kinds() {
		types[i] = k.String()
	}
	return json.Marshal(map[string]any{
		"model_type":          c.ModelType,
		"vocab_size":          c.VocabSize,
		"hidden_size":         c.HiddenSize,
		"intermediate_size":   c.IntermediateSize,
		"num_hidden_layers":   c.NumLayers,
		"num_attention_heads": c.NumHeads,
		"num_key_value_heads": c.NumKVHeads,
		"head_dim":            c.HeadDim,
		"rms_norm_eps":        c.RMSNormEps,
		"tie_word_embeddings": c.TieWordEmbeddings,
		"attention_bias":      c.AttentionBias,
		"hidden_act":          "silu",
		"layer_types":         types,
		"rope_parameters":     map[string]any{"rope_type": "default", "rope_theta": c.RopeTheta},
	})
}

// fields are config.json's keys, text_config's over the top level's.
type fields struct{ m map[string]json.RawMessage }

func configFields(data []byte) (fields, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return fields{}, cfgErr("(file)", "not a JSON object: %v", err)
	}
	if raw, ok := top["text_config"]; ok && string(raw) != "null" {
		var nested map[string]json.RawMessage
		if err := json.Unmarshal(raw, &nested); err != nil {
			return fields{}, cfgErr("text_config", "want an object, got %s", snippet(raw))
		}
		for k, v := range nested {
			top[k] = v
		}
	}
	return fields{m: top}, nil
}

// get returns key's value, treating JSON null as absent.
func (f fields) get(m map[string]json.RawMessage, key string) (json.RawMessage, bool) {
	raw, ok := m[key]
	if !ok || string(raw) == "null" {
		return nil, false
	}
	return raw, true
}

// int reads a non-negative JSON integer; def < 0 makes the key required.
func (f fields) int(key string, def int) (int, error) {
	raw, ok := f.get(f.m, key)
	if !ok {
		if def < 0 {
			return 0, cfgErr(key, "missing")
		}
		return def, nil
	}
	limit := maxDim
	if key == "num_hidden_layers" {
		limit = maxLayers // the layer count's own, smaller limit
	}
	var v float64
	if err := json.Unmarshal(raw, &v); err != nil || v != math.Trunc(v) || v < 0 || v > float64(limit) {
		return 0, cfgErr(key, "want an integer in [0, %d], got %s", limit, snippet(raw))
	}
	return int(v), nil
}

func (f fields) float(m map[string]json.RawMessage, key string, def float64) (float64, error) {
	raw, ok := f.get(m, key)
	if !ok {
		return def, nil
	}
	var v float64
	if err := json.Unmarshal(raw, &v); err != nil {
		return 0, cfgErr(key, "want a number, got %s", snippet(raw))
	}
	return v, nil
}

func (f fields) bool(key string) (bool, error) {
	raw, ok := f.get(f.m, key)
	if !ok {
		return false, nil
	}
	var v bool
	if err := json.Unmarshal(raw, &v); err != nil {
		return false, cfgErr(key, "want true or false, got %s", snippet(raw))
	}
	return v, nil
}

func (f fields) str(key, def string) (string, error) {
	raw, ok := f.get(f.m, key)
	if !ok {
		return def, nil
	}
	var v string
	if err := json.Unmarshal(raw, &v); err != nil {
		return "", cfgErr(key, "want a string, got %s", snippet(raw))
	}
	return v, nil
}

// rope reads rope_theta from rope_parameters (transformers 5), else the flat key, and
// refuses any rope type but the default (no scaling).
func (f fields) rope(c *Config) error {
	var err error
	if c.RopeTheta, err = f.float(f.m, "rope_theta", 10000); err != nil {
		return err
	}
	for _, key := range []string{"rope_parameters", "rope_scaling"} {
		raw, ok := f.get(f.m, key)
		if !ok {
			continue
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return cfgErr(key, "want an object, got %s", snippet(raw))
		}
		for _, k := range []string{"rope_type", "type"} {
			if t, ok := f.get(m, k); ok && string(t) != `"default"` {
				return cfgErr(key+"."+k, "only the default rope is built, got %s", snippet(t))
			}
		}
		if key == "rope_parameters" {
			if c.RopeTheta, err = f.float(m, "rope_theta", c.RopeTheta); err != nil {
				return cfgErr(key+".rope_theta", "want a number")
			}
		}
	}
	return nil
}

// unsupported refuses options of the HF class this package does not build.
func (f fields) unsupported(layers int) error {
	if v, err := f.bool("use_sliding_window"); err != nil || v {
		return cmp.Or(err, cfgErr("use_sliding_window", "sliding-window attention is not built"))
	}
	if act, err := f.str("hidden_act", "silu"); err != nil || act != "silu" {
		return cmp.Or(err, cfgErr("hidden_act", "only silu is built, got %s", checkpoint.QuoteShort(act)))
	}
	raw, ok := f.get(f.m, "layer_types")
	if !ok {
		return nil
	}
	var types []string
	if err := json.Unmarshal(raw, &types); err != nil {
		return cfgErr("layer_types", "want an array of strings, got %s", snippet(raw))
	}
	if len(types) != layers {
		return cfgErr("layer_types", "has %d entries for num_hidden_layers=%d", len(types), layers)
	}
	for i, t := range types {
		if t != nn.Attention.String() {
			return cfgErr(fmt.Sprintf("layer_types[%d]", i), "a Qwen3 layer is %q, got %s", nn.Attention.String(), checkpoint.QuoteShort(t))
		}
	}
	return nil
}

// snippet shortens a raw JSON value for an error message.
func snippet(raw json.RawMessage) string { return checkpoint.Snippet(raw) }
