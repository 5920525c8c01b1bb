// Package repro is the repro's run loop, shared by cmd/decode and the browser
// playground: given a model on its graph, it decodes (one completion on mlx-lm's batch
// path or on the plain path, or a continuous-batching churn of requests), samples the
// allocator's live buffers every few tokens, follows the census of pending nodes, and
// stops at the resource-limit crash, at a context's cancellation or at the last token.
// Callers watch it through Hooks (the command prints, the page charts) and judge the
// Result with package predict.
package repro
