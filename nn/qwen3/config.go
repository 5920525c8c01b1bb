package qwen3

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"

	"github.com/ingotml/ingot/nn"
)

// TypeQwen3 is the model_type this package builds.
const TypeQwen3 = "qwen3"

// The config limits every family holds its sizes to (nn.MaxLayers, nn.MaxDim).
const (
	maxLayers = nn.MaxLayers
	maxDim    = nn.MaxDim
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
var ErrConfig = nn.ErrConfig

// ConfigError reports one config.json field that is missing, mistyped, out of range
// or asks for something this package does not build, formatted as
// "qwen3 config: <key>: <reason>" (nn's one config reader's error).
type ConfigError = nn.ConfigError

// family names this package in its config errors.
const family = "qwen3"

func cfgErr(key, format string, args ...any) error { return nn.ConfigErr(family, key, format, args...) }

// ParseHFConfig parses and validates a Hugging Face config.json. Keys may be at the
// top level or nested under "text_config" (nested keys win). Absent keys take
// transformers' Qwen3Config defaults: num_key_value_heads = num_attention_heads,
// head_dim 128, rms_norm_eps 1e-6, rope_theta 10000, untied embeddings, no biases.
// Options this package does not build (sliding windows, rope scaling, another
// activation, a recurrent layer type) are refused.
func ParseHFConfig(data []byte) (*Config, error) {
	f, err := nn.ReadConfigFields(family, data)
	if err != nil {
		return nil, err
	}
	c := &Config{}
	if c.ModelType, err = f.String("model_type", TypeQwen3); err != nil {
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
		if x.def < 0 {
			*x.dst, err = f.RequiredInt(x.key)
		} else {
			*x.dst, err = f.Int(x.key, x.def)
		}
		if err != nil {
			return nil, err
		}
	}
	c.NumKVHeads = cmp.Or(c.NumKVHeads, c.NumHeads)
	if c.RMSNormEps, err = f.Float("rms_norm_eps", 1e-6); err != nil {
		return nil, err
	}
	if c.TieWordEmbeddings, err = f.Bool("tie_word_embeddings", false); err != nil {
		return nil, err
	}
	if c.AttentionBias, err = f.Bool("attention_bias", false); err != nil {
		return nil, err
	}
	if err := rope(f, c); err != nil {
		return nil, err
	}
	if err := unsupported(f, c.NumLayers); err != nil {
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
	return nn.LoadConfig(family, path, ParseHFConfig)
}

// Validate checks every size and constant the model is built from.
func (c *Config) Validate() error {
	if c.ModelType != TypeQwen3 {
		return cfgErr("model_type", "this package builds %q, not %s", TypeQwen3, nn.Quote(c.ModelType))
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

// rope reads rope_theta from rope_parameters (transformers 5), else the flat key, and
// refuses any rope type but the default (no scaling).
func rope(f nn.ConfigFields, c *Config) error {
	var err error
	if c.RopeTheta, err = f.Float("rope_theta", 10000); err != nil {
		return err
	}
	for _, key := range []string{"rope_parameters", "rope_scaling"} {
		sub, err := f.Object(key)
		if err != nil {
			return err
		}
		for _, k := range []string{"rope_type", "type"} {
			if t, ok := sub.Get(k); ok && string(t) != `"default"` {
				return sub.Err(k, "only the default rope is built, got %s", nn.Snippet(t))
			}
		}
		if key == "rope_parameters" {
			if c.RopeTheta, err = sub.Float("rope_theta", c.RopeTheta); err != nil {
				return err
			}
		}
	}
	return nil
}

// unsupported refuses options of the HF class this package does not build.
func unsupported(f nn.ConfigFields, layers int) error {
	if v, err := f.Bool("use_sliding_window", false); err != nil || v {
		return cmp.Or(err, cfgErr("use_sliding_window", "sliding-window attention is not built"))
	}
	if act, err := f.String("hidden_act", "silu"); err != nil || act != "silu" {
		return cmp.Or(err, cfgErr("hidden_act", "only silu is built, got %s", nn.Quote(act)))
	}
	types, ok, err := f.Strings("layer_types")
	if err != nil || !ok {
		return err
	}
	if len(types) != layers {
		return cfgErr("layer_types", "has %d entries for num_hidden_layers=%d", len(types), layers)
	}
	for i, t := range types {
		if t != nn.Attention.String() {
			return cfgErr(fmt.Sprintf("layer_types[%d]", i), "a Qwen3 layer is %q, got %s", nn.Attention.String(), nn.Quote(t))
		}
	}
	return nil
}

// Resize returns a validated copy with the hidden size changed (0 keeps it); any
// expert count wraps nn.ErrDense: every Qwen3 layer is dense.
func (c *Config) Resize(hidden, experts int) (*Config, error) {
	if experts > 0 {
		return nil, nn.ErrDense
	}
	r := *c
	if hidden > 0 {
		r.HiddenSize = hidden
	}
	if err := r.Validate(); err != nil {
		return nil, err
	}
	return &r, nil
}
