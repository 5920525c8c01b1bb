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
// mlx-lm's layout [B, Hv, Dv, Dk].
package qwen35
