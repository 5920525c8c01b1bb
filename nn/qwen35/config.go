package qwen35

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strings"
)

// LayerType says which token mixer a decoder layer uses.
type LayerType int

// The zero LayerType is deliberately invalid so an unset entry fails Validate.
const (
	// GatedDeltaNet is a linear-attention (recurrent "SSM") layer; HF calls it "linear_attention".
	GatedDeltaNet LayerType = iota + 1
	// FullAttention is a causal softmax-attention layer with a KV cache; HF calls it "full_attention".
	FullAttention
)

// String returns the HF config spelling ("linear_attention", "full_attention").
func (t LayerType) String() string {
	switch t {
	case GatedDeltaNet:
		return "linear_attention"
	case FullAttention:
		return "full_attention"
	}
	return fmt.Sprintf("LayerType(%d)", int(t))
}

// Limits that keep hostile configs from driving huge allocations or integer
// overflow further down; real models are orders of magnitude below them.
const (
	maxLayers = 1 << 16
	maxDim    = 1 << 24
)

// Config is the architecture of a Qwen3.5 (dense or MoE) hybrid model. Field
// comments give the HF config.json key.
type Config struct {
	ModelType string // model_type: "qwen3_5_text", "qwen3_5_moe_text", "qwen3_5_moe", "qwen3_next", ...

	VocabSize  int // vocab_size
	HiddenSize int // hidden_size
	NumLayers  int // num_hidden_layers
	NumHeads   int // num_attention_heads
	NumKVHeads int // num_key_value_heads
	HeadDim    int // head_dim

	LinearNumKeyHeads   int // linear_num_key_heads (Hk)
	LinearNumValueHeads int // linear_num_value_heads (Hv)
	LinearKeyHeadDim    int // linear_key_head_dim (Dk)
	LinearValueHeadDim  int // linear_value_head_dim (Dv)
	LinearConvKernel    int // linear_conv_kernel_dim (K)

	RMSNormEps        float64 // rms_norm_eps
	TieWordEmbeddings bool    // tie_word_embeddings
	AttentionBias     bool    // attention_bias

	LayerTypes []LayerType // layer_types, or derived from full_attention_interval

	RopeTheta           float64 // rope_parameters.rope_theta
	PartialRotaryFactor float64 // rope_parameters.partial_rotary_factor

	IntermediateSize int // intermediate_size: dense MLP width; unused by MoE models

	NumExperts                   int  // num_experts (0 for a dense model)
	NumExpertsPerTok             int  // num_experts_per_tok (top-k)
	MoEIntermediateSize          int  // moe_intermediate_size: width of each routed expert
	SharedExpertIntermediateSize int  // shared_expert_intermediate_size
	NormTopKProb                 bool // renormalise the top-k router weights; always true for Qwen3.5-MoE
}

// ConfigError reports an invalid or unreadable configuration field. Field is
// the config.json key (or a ReproOptions field name).
type ConfigError struct {
	Field  string
	Reason string
}

// Error formats the error as "qwen35 config: <field>: <reason>".
func (e *ConfigError) Error() string {
	return "qwen35 config: " + e.Field + ": " + e.Reason
}

func cfgErr(field, format string, args ...any) error {
	return &ConfigError{Field: field, Reason: fmt.Sprintf(format, args...)}
}

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
	data, err := os.ReadFile(path)
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
	if err := f.normTopK(c, hf || c.ModelType != "qwen3_next"); err != nil {
		return nil, err
	}
	return c, nil
}

// fields holds the raw values of a JSON object by key; a JSON null counts as absent.
type fields struct {
	prefix string // for nested objects, e.g. "rope_parameters."
	m      map[string]json.RawMessage
}

// configFields decodes the top-level object and overlays text_config on it.
func configFields(data []byte) (fields, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil || top == nil {
		return fields{}, cfgErr("config", "not a JSON object")
	}
	f := fields{m: top}
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
func snippet(raw json.RawMessage) string {
	r := []rune(strings.TrimSpace(string(raw)))
	if len(r) > 40 {
		return string(r[:40]) + "..."
	}
	return string(r)
}

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
			return nil, cfgErr(fmt.Sprintf("layer_types[%d]", i), "unknown layer type %q", name)
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
// returns the first problem as a *ConfigError.
func (c *Config) Validate() error {
	sizes := []sizeField{
		{"vocab_size", c.VocabSize},
		{"hidden_size", c.HiddenSize},
		{"num_hidden_layers", c.NumLayers},
		{"num_attention_heads", c.NumHeads},
		{"num_key_value_heads", c.NumKVHeads},
		{"head_dim", c.HeadDim},
	}
	if err := checkSizes(sizes); err != nil {
		return err
	}
	if c.NumLayers > maxLayers {
		return cfgErr("num_hidden_layers", "%d exceeds the limit of %d", c.NumLayers, maxLayers)
	}
	if c.NumHeads%c.NumKVHeads != 0 {
		return cfgErr("num_key_value_heads", "%d does not divide num_attention_heads %d", c.NumKVHeads, c.NumHeads)
	}
	if err := c.validateLayers(); err != nil {
		return err
	}
	if c.NumGDN() > 0 {
		if err := checkSizes([]sizeField{
			{"linear_num_key_heads", c.LinearNumKeyHeads},
			{"linear_num_value_heads", c.LinearNumValueHeads},
			{"linear_key_head_dim", c.LinearKeyHeadDim},
			{"linear_value_head_dim", c.LinearValueHeadDim},
			{"linear_conv_kernel_dim", c.LinearConvKernel},
		}); err != nil {
			return err
		}
		if c.LinearNumValueHeads%c.LinearNumKeyHeads != 0 {
			return cfgErr("linear_num_value_heads", "%d is not a multiple of linear_num_key_heads %d",
				c.LinearNumValueHeads, c.LinearNumKeyHeads)
		}
	}
	if !(c.RMSNormEps > 0) || math.IsInf(c.RMSNormEps, 0) {
		return cfgErr("rms_norm_eps", "must be positive and finite, got %g", c.RMSNormEps)
	}
	if !(c.RopeTheta > 0) || math.IsInf(c.RopeTheta, 0) {
		return cfgErr("rope_theta", "must be positive and finite, got %g", c.RopeTheta)
	}
	if !(c.PartialRotaryFactor > 0 && c.PartialRotaryFactor <= 1) {
		return cfgErr("partial_rotary_factor", "must be in (0, 1], got %g", c.PartialRotaryFactor)
	}
	if rd := c.RotaryDims(); rd < 2 || rd%2 != 0 {
		return cfgErr("partial_rotary_factor", "head_dim %d * %g gives %d rotary dims; need a positive even number",
			c.HeadDim, c.PartialRotaryFactor, rd)
	}
	return c.validateMLP()
}

// sizeField is a named integer that must be positive and at most maxDim.
type sizeField struct {
	key string
	v   int
}

func checkSizes(sizes []sizeField) error {
	for _, s := range sizes {
		if s.v <= 0 {
			return cfgErr(s.key, "must be positive, got %d", s.v)
		}
		if s.v > maxDim {
			return cfgErr(s.key, "%d exceeds the limit of %d", s.v, maxDim)
		}
	}
	return nil
}

func (c *Config) validateLayers() error {
	if len(c.LayerTypes) != c.NumLayers {
		return cfgErr("layer_types", "has %d entries for %d layers", len(c.LayerTypes), c.NumLayers)
	}
	for i, t := range c.LayerTypes {
		if t != GatedDeltaNet && t != FullAttention {
			return cfgErr(fmt.Sprintf("layer_types[%d]", i), "unknown layer type %v", t)
		}
	}
	if c.FirstAttention() < 0 {
		return cfgErr("layer_types", "no full_attention layer among %d layers", c.NumLayers)
	}
	return nil
}

func (c *Config) validateMLP() error {
	if c.NumExperts < 0 {
		return cfgErr("num_experts", "must not be negative, got %d", c.NumExperts)
	}
	if !c.IsMoE() {
		return checkSizes([]sizeField{{"intermediate_size", c.IntermediateSize}})
	}
	if c.NumExperts > maxDim {
		return cfgErr("num_experts", "%d exceeds the limit of %d", c.NumExperts, maxDim)
	}
	if c.NumExpertsPerTok < 1 || c.NumExpertsPerTok > c.NumExperts {
		return cfgErr("num_experts_per_tok", "must be in [1, num_experts=%d], got %d", c.NumExperts, c.NumExpertsPerTok)
	}
	return checkSizes([]sizeField{
		{"moe_intermediate_size", c.MoEIntermediateSize},
		{"shared_expert_intermediate_size", c.SharedExpertIntermediateSize},
	})
}

// IsMoE reports whether every layer's MLP is the sparse mixture-of-experts block.
func (c *Config) IsMoE() bool { return c.NumExperts > 0 }

// IsAttention reports whether layer is a full-attention layer; out-of-range
// layers report false.
func (c *Config) IsAttention(layer int) bool {
	return layer >= 0 && layer < len(c.LayerTypes) && c.LayerTypes[layer] == FullAttention
}

// NumGDN returns the number of Gated DeltaNet (linear-attention) layers.
func (c *Config) NumGDN() int {
	n := 0
	for _, t := range c.LayerTypes {
		if t == GatedDeltaNet {
			n++
		}
	}
	return n
}

// FirstAttention returns the index of the first full-attention layer, or -1 if there is none.
func (c *Config) FirstAttention() int {
	for i, t := range c.LayerTypes {
		if t == FullAttention {
			return i
		}
	}
	return -1
}

// RotaryDims returns how many leading dims of each attention head RoPE rotates.
func (c *Config) RotaryDims() int {
	return int(float64(c.HeadDim) * c.PartialRotaryFactor)
}

// ReproOptions are the knobs of the leak repro's random model (its
// --layers, --interval, --experts, --hidden and --attention-only flags).
// Zero values select the repro's defaults.
type ReproOptions struct {
	Layers        int  // decoder layers; 0 means 50
	Interval      int  // full_attention_interval; 0 means Layers (one attention layer, last)
	Experts       int  // routed experts; 0 means 8
	Hidden        int  // hidden size; 0 means 64
	AttentionOnly bool // interval 1: every layer attends, no GDN layers (the control run)
}

// ReproConfig returns the random qwen3_5_moe model the MLX leak repro builds:
// vocab 128, 4 heads / 2 kv heads of dim 16, Hk 2, Hv 4, Dk = Dv = 16, conv
// kernel 4, top-2 routing over experts of width 32 plus a shared expert of
// width 32, rope_theta 10000, partial_rotary_factor 0.25, eps 1e-6.
func ReproConfig(o ReproOptions) (*Config, error) {
	for _, x := range []sizeField{{"Layers", o.Layers}, {"Interval", o.Interval}, {"Experts", o.Experts}, {"Hidden", o.Hidden}} {
		if x.v < 0 {
			return nil, cfgErr(x.key, "must not be negative, got %d", x.v)
		}
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
		ModelType:                    "qwen3_5_moe",
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
	return validated(c, nil)
}
