// Package nn holds what models share: the safetensors reader and the small layers a
// transformer is built from (Linear, Embedding, RMSNorm, GatedRMSNorm, RoPE, the SwiGLU
// MLP and the SwitchGLU mixture-of-experts bank).
//
// A layer is a plain struct of weights (tensor.Array values, usually made once with
// tensor.FromFloat32) with a Forward method that builds lazy tensor ops; nothing runs
// until the caller evaluates the result. Layers hold no per-call state, so one layer may
// serve any number of forwards and batch shapes.
package nn
