// Package nn holds what model families share, so that a family's package holds only
// what is its own. The toolkit: the Model interface and the Decoder frame that gives a
// model Forward and ForwardHidden (embed, layers, final norm, head); the layers a
// transformer is built from (Linear, Embedding, RMSNorm, GatedRMSNorm, RoPE,
// SelfAttention with its KV cache, the SwiGLU MLP, the SwitchGLU mixture-of-experts
// bank and their quantized forms); the one way weights arrive (a Builder asking a Source,
// CheckpointSource or RandomSource, for each parameter by name and Kind; Record runs
// the same build dry for a Description); the one Hugging Face config reader
// (ReadConfigFields, ConfigError); and Family, what a family's package gives the
// registry. The file formats themselves live in nn/checkpoint; each model family is a
// package of its own (nn/qwen35, ...), and nn/models is the registry the commands use.
//
// A layer is a plain struct of weights (tensor.Array values, usually made once with
// tensor.FromFloat32) with a Forward method that builds lazy tensor ops; nothing runs
// until the caller evaluates the result. Layers hold no per-call state, so one layer may
// serve any number of forwards and batch shapes.
package nn
