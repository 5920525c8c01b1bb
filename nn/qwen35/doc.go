// Package qwen35 is the Qwen3.5 hybrid language model (dense SwiGLU and sparse-MoE
// variants): Gated DeltaNet ("linear attention") layers with a recurrent state, and
// every few layers a gated full-attention layer with a KV cache.
//
// Load reads a Hugging Face checkpoint directory (config.json + model.safetensors: HF
// runtime names with fused experts, save_pretrained's per-expert names, the
// model.language_model. prefix of published checkpoints, or mlx-lm's sanitized layout);
// NewRandom builds a deterministic random model of any Config (the leak repro).
//
// Forward follows mlx-lm 0.31.3's data flow exactly where it decides what the lazy cache
// policy leaks: the SSM mask is made once per forward from layer 0's cache only, the
// attention mask from the first attention layer's cache only, every GDN layer advances
// its own cache once per forward, and every attention layer reads its own RoPE offsets.
// The math follows transformers (spec/qwen35.md); the recurrent state is stored in
// mlx-lm's layout [B, Hv, Dv, Dk]. Qwen3-Next (model_type qwen3_next) is built by the
// same layers: see Config.FusedGDNProjections, Config.IsSparse and docs/qwen3-next.md.
//
// Dtypes follow MLX: weights stay in their stored dtype (float32, float16 or bfloat16);
// the activations take the embedding table's dtype, and every matmul, norm, RoPE,
// attention, conv, softmax and MoE output is in that dtype (the fused kernels compute
// in float32 inside, as MLX's do, and round their outputs). Two parts are float32
// whatever the checkpoint: -exp(A_log) and the log-decay (as mlx-lm computes them), and
// the gated-delta recurrent state (kept float32 as transformers keeps it; mlx-lm keeps
// it in the activation dtype). The recurrence's output is rounded to the activation
// dtype.
package qwen35
