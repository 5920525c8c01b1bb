package qwen35

import (
	"fmt"
	"slices"
	"sort"

	"github.com/ingotml/ingot/nn/checkpoint"
)

// readKeys are the config.json keys the family reads (parse.go).
var readKeys = []string{
	"model_type", "vocab_size", "hidden_size", "num_hidden_layers", "num_attention_heads",
	"num_key_value_heads", "head_dim", "linear_num_key_heads", "linear_num_value_heads",
	"linear_key_head_dim", "linear_value_head_dim", "linear_conv_kernel_dim",
	"intermediate_size", "num_experts", "num_experts_per_tok", "moe_intermediate_size",
	"shared_expert_intermediate_size", "rms_norm_eps", "tie_word_embeddings",
	"attention_bias", "layer_types", "full_attention_interval", "rope_parameters",
	"rope_theta", "partial_rotary_factor", "norm_topk_prob", "text_config",
}

// nextKeys are read for Qwen3-Next only: the dense-layer rule. A Qwen3.5 config that
// carries them is rejected rather than silently built with every layer sparse.
var nextKeys = []string{"mlp_only_layers", "decoder_sparse_step"}

// inertKeys do not change what an inference forward computes: training knobs, token
// ids, bookkeeping, serialisation metadata. The quantization keys belong to the
// checkpoint loader (the weights' own layout decides how a layer is built).
var inertKeys = []string{
	"architectures", "attention_dropout", "bos_token_id", "eos_token_id", "pad_token_id",
	"dtype", "torch_dtype", "initializer_range", "max_position_embeddings",
	"output_router_logits", "router_aux_loss_coef", "use_cache", "transformers_version",
	"mtp_num_hidden_layers", "mtp_use_dedicated_embeddings", "mamba_ssm_dtype",
	"quantization", "quantization_config", "max_window_layers", "sliding_window",
	"return_dict", "output_hidden_states", "output_attentions", "torchscript",
	"tokenizer_class", "is_encoder_decoder", "id2label", "label2id", "problem_type",
	"chunk_size_feed_forward", "tie_encoder_decoder",
}

// fixedKeys are accepted only with the value the family implements (a JSON value,
// compared after decoding).
var fixedKeys = map[string]any{
	"hidden_act":         "silu",
	"attn_output_gate":   true,
	"use_sliding_window": false,
}

// checkKnown rejects keys of the text model's object that modelType does not know (a
// null value counts as absent), and known keys whose value the family does not
// implement. Keys starting with "_" (e.g. "_name_or_path") are metadata.
func (f fields) checkKnown(modelType string) error {
	if !slices.Contains(ModelTypes, modelType) {
		return nil // Validate names the model type itself
	}
	var unknown []string
	for k := range f.own {
		if _, ok := f.get(k); !ok || k == "" || k[0] == '_' {
			continue
		}
		switch {
		case slices.Contains(readKeys, k), slices.Contains(inertKeys, k):
		case slices.Contains(nextKeys, k) && modelType == TypeQwen3Next:
		case fixedKeys[k] != nil:
			if err := f.fixed(k); err != nil {
				return err
			}
		default:
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return cfgErr(unknown[0], "unknown to model type %s (the family cannot honour it)", checkpoint.QuoteShort(modelType))
	}
	return nil
}

// fixed checks that key holds the one value the family implements.
func (f fields) fixed(key string) error {
	want := fixedKeys[key]
	var err error
	var got any
	switch w := want.(type) {
	case string:
		var s string
		s, err = f.string(key)
		got = s
	case bool:
		var b bool
		b, err = f.bool(key, !w)
		got = b
	}
	if err != nil {
		return err
	}
	if got != want {
		return cfgErr(key, "only %v is supported, got %s", want, checkpoint.Short(fmt.Sprint(got)))
	}
	return nil
}
