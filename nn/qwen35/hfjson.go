package qwen35

import (
	"encoding/json"
)

// MarshalHF writes c as a flat Hugging Face config.json (explicit layer_types and
// rope_parameters), which ParseHFConfig reads back to an equal Config. The leak repro
// uses it to build its random model through the model registry like any checkpoint.
func (c *Config) MarshalHF() ([]byte, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	types := make([]string, len(c.LayerTypes))
	for i, t := range c.LayerTypes {
		types[i] = t.String()
	}
	m := map[string]any{
		"model_type":             c.ModelType,
		"vocab_size":             c.VocabSize,
		"hidden_size":            c.HiddenSize,
		"num_hidden_layers":      c.NumLayers,
		"num_attention_heads":    c.NumHeads,
		"num_key_value_heads":    c.NumKVHeads,
		"head_dim":               c.HeadDim,
		"linear_num_key_heads":   c.LinearNumKeyHeads,
		"linear_num_value_heads": c.LinearNumValueHeads,
		"linear_key_head_dim":    c.LinearKeyHeadDim,
		"linear_value_head_dim":  c.LinearValueHeadDim,
		"linear_conv_kernel_dim": c.LinearConvKernel,
		"rms_norm_eps":           c.RMSNormEps,
		"tie_word_embeddings":    c.TieWordEmbeddings,
		"attention_bias":         c.AttentionBias,
		"layer_types":            types,
		"rope_parameters": map[string]any{
			"rope_theta":            c.RopeTheta,
			"partial_rotary_factor": c.PartialRotaryFactor,
		},
	}
	if c.IntermediateSize > 0 {
		m["intermediate_size"] = c.IntermediateSize
	}
	if c.NumExperts > 0 {
		m["num_experts"] = c.NumExperts
		m["num_experts_per_tok"] = c.NumExpertsPerTok
		m["moe_intermediate_size"] = c.MoEIntermediateSize
		m["shared_expert_intermediate_size"] = c.SharedExpertIntermediateSize
		m["norm_topk_prob"] = c.NormTopKProb
	}
	if c.ModelType == TypeQwen3Next {
		m["mlp_only_layers"] = append([]int{}, c.MLPOnlyLayers...)
		m["decoder_sparse_step"] = max(c.DecoderSparseStep, 1)
	}
	return json.Marshal(m)
}
