// Package nn holds what models share: the Model interface, the layer kinds a model
// reports, and the small layers a transformer is built from (Linear, Embedding, RMSNorm,
// GatedRMSNorm, RoPE, the SwiGLU MLP, the SwitchGLU mixture-of-experts bank and their
// quantized forms), plus the loaders that make those layers from a checkpoint
// (LoadLinear, LoadEmbedding, LoadExperts). The file formats themselves live in
// nn/checkpoint; each model family is a package of its own (nn/qwen35, ...), and
// nn/models is the registry the commands use.
//
// A layer is a plain struct of weights (tensor.Array values, usually made once with
// tensor.FromFloat32) with a Forward method that builds lazy tensor ops; nothing runs
// until the caller evaluates the result. Layers hold no per-call state, so one layer may
// serve any number of forwards and batch shapes.
package nn
