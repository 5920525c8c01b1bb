package qwen35

import (
	"fmt"
	"math"
	"slices"

	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/checkpoint"
)

// LayerType says which token mixer a decoder layer uses (the engine-wide nn.LayerKind).
type LayerType = nn.LayerKind

// The layer types of the family. The zero LayerType is invalid, so an unset entry
// fails Validate.
const (
	// GatedDeltaNet is a linear-attention (recurrent "SSM") layer; HF calls it "linear_attention".
	GatedDeltaNet = nn.Recurrent
	// FullAttention is a causal softmax-attention layer with a KV cache; HF calls it "full_attention".
	FullAttention = nn.Attention
)

// The model types this package builds. Qwen3-Next is the family's ancestor: the same
// layers, with fused GDN input projections and a per-layer dense/sparse MLP rule (see
// docs/qwen3-next.md).
const (
	TypeQwen35        = "qwen3_5"
	TypeQwen35Text    = "qwen3_5_text"
	TypeQwen35MoE     = "qwen3_5_moe"
	TypeQwen35MoEText = "qwen3_5_moe_text"
	TypeQwen3Next     = "qwen3_next"
)

// ModelTypes lists the model_type values this package builds.
var ModelTypes = []string{TypeQwen35, TypeQwen35Text, TypeQwen35MoE, TypeQwen35MoEText, TypeQwen3Next}

// Limits that keep hostile configs from driving huge allocations or integer
// overflow further down; real models are orders of magnitude below them.
const (
	maxLayers = 1 << 16
	maxDim    = 1 << 24
)

// Config is the architecture of a Qwen3.5 (dense or MoE) hybrid model. Field
// comments give the HF config.json key.
type Config struct {
	ModelType string // model_type: one of ModelTypes

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

	// Qwen3-Next only (zero for Qwen3.5: every layer sparse iff NumExperts > 0).
	MLPOnlyLayers     []int // mlp_only_layers: layers whose MLP is dense whatever the rule says
	DecoderSparseStep int   // decoder_sparse_step: layer i may be sparse iff (i+1) % step == 0; 0 means 1
}

// ConfigError reports an invalid or unreadable configuration field. Field is
// the config.json key (or a ReproOptions field name).
type ConfigError struct {
	Field  string
	Reason string
}

// Error formats the error as "qwen35 config: <field>: <reason>".
func (e *ConfigError) Error() string {
	return checkpoint.Printable("qwen35 config: " + e.Field + ": " + e.Reason) // keys come from the file
}

func cfgErr(field, format string, args ...any) error {
	// The key may come from the file: a long one is cut.
	return &ConfigError{Field: checkpoint.Short(field), Reason: fmt.Sprintf(format, args...)}
}

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
	// The layer count's own limit first: the size limit below is larger.
	if c.NumLayers > maxLayers {
		return cfgErr("num_hidden_layers", "%d exceeds the limit of %d", c.NumLayers, maxLayers)
	}
	if err := checkSizes(sizes); err != nil {
		return err
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
	if !slices.Contains(ModelTypes, c.ModelType) {
		return cfgErr("model_type", "unknown model type %s (this package builds %v)", checkpoint.QuoteShort(c.ModelType), ModelTypes)
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
	if c.ModelType != TypeQwen3Next && (len(c.MLPOnlyLayers) > 0 || c.DecoderSparseStep > 1) {
		return cfgErr("mlp_only_layers", "model type %s has no dense-layer rule (only %s has)", c.ModelType, TypeQwen3Next)
	}
	if c.DecoderSparseStep < 0 || c.DecoderSparseStep > maxLayers {
		return cfgErr("decoder_sparse_step", "must be in [1, %d], got %d", maxLayers, c.DecoderSparseStep)
	}
	for i, l := range c.MLPOnlyLayers {
		if l < 0 || l >= c.NumLayers {
			return cfgErr(fmt.Sprintf("mlp_only_layers[%d]", i), "layer %d outside [0, %d)", l, c.NumLayers)
		}
	}
	if c.NumSparse() < c.NumLayers {
		if err := checkSizes([]sizeField{{"intermediate_size", c.IntermediateSize}}); err != nil {
			return err
		}
	}
	if !c.IsMoE() {
		return nil
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

// IsMoE reports whether the model has routed experts (some layer's MLP is sparse).
func (c *Config) IsMoE() bool { return c.NumExperts > 0 }

// IsSparse reports whether layer's MLP is the sparse mixture-of-experts block: the
// model has experts, the layer is not in mlp_only_layers, and (layer+1) is a multiple
// of decoder_sparse_step (transformers' and mlx-lm's Qwen3-Next rule; for Qwen3.5 every
// layer of an MoE model).
func (c *Config) IsSparse(layer int) bool {
	step := max(c.DecoderSparseStep, 1)
	return c.NumExperts > 0 && !slices.Contains(c.MLPOnlyLayers, layer) && (layer+1)%step == 0
}

// NumSparse returns the number of layers whose MLP is sparse.
func (c *Config) NumSparse() int {
	n := 0
	for i := 0; i < c.NumLayers; i++ {
		if c.IsSparse(i) {
			n++
		}
	}
	return n
}

// FusedGDNProjections reports whether GDN layers store Qwen3-Next's fused, per-key-head
// grouped in_proj_qkvz and in_proj_ba instead of Qwen3.5's four projections.
func (c *Config) FusedGDNProjections() bool { return c.ModelType == TypeQwen3Next }

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
