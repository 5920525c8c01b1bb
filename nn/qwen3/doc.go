// Package qwen3 is the dense Qwen3 language model (Hugging Face's Qwen3ForCausalLM):
// every decoder layer is causal softmax attention with a growing KV cache (per-head
// RMS-normalised q and k, rotary positions over the whole head, grouped KV heads) and a
// SwiGLU MLP. It has no recurrent layers, so it is the leak repro's control: the lazy
// cache policy's dead chains grow only through recurrent (GDN) caches, and a model of
// this family never leaks.
//
// Load reads a Hugging Face checkpoint directory (config.json and its safetensors,
// float or mlx-community's affine-quantized layout); NewRandom builds a deterministic
// random model of any Config; Describe and Inspect describe a model before anything is
// allocated, by running the same build dry (nn.Builder, nn.Record), so the description and the
// build cannot drift. The math follows transformers; norms use their weight as stored.
//
// Dtypes follow MLX: weights keep their stored dtype and the activations take the
// embedding table's (float32 when the table is quantized: the quantized kernels compute
// and return float32).
package qwen3
