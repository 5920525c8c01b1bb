// Package checkpoint reads and writes model checkpoints as Hugging Face and mlx-lm lay
// them out: safetensors files (parsed and validated header first, tensors memory-mapped),
// sharded checkpoints and their index, mlx-community quantization blocks in config.json,
// and the writers behind cmd/quantize (host-side affine quantization, shards, index).
//
// It knows file formats, not models: which tensors a model needs is the model package's
// business (nn/qwen35 and the others), and turning stored tensors into layers is nn's
// (nn.LoadLinear and friends). Checkpoint.Tensor places one stored tensor on a graph's
// device in its stored dtype.
package checkpoint
