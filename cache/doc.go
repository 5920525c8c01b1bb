// Package cache holds the per-layer caches of a Qwen3.5 forward pass: the attention
// KV caches (KVCache for one sequence, BatchKVCache for a left-padded batch) and the
// Gated-DeltaNet recurrent-state cache (ArraysCache), with mlx-lm's merge, filter,
// extend, extract, prepare and finalize operations for batched generation.
//
// # Two bookkeeping policies
//
// The per-row metadata of a batch (left padding, prepared lengths, RoPE offsets) is kept
// under one of two policies:
//
//   - Lazy reproduces mlx-lm 0.31.3: the metadata are int32 device arrays and every
//     update (Advance, Filter, Extend, Finalize) adds a lazy node on top of the previous
//     one. Advance's `left_padding -= n` allocates a fresh 4-byte scalar each call. Only
//     layer 0's ArraysCache has its mask read by the model, so every other GDN layer
//     accumulates a dead chain that pins one buffer per decode step: the leak.
//   - Eager is the fix: the metadata are host ints, updates are integer arithmetic, and a
//     device array is made only inside MakeMask or Offsets, for the step that reads it.
//
// Both give the same masks and offsets (values), so model outputs are bit-identical.
//
// # Masks
//
// ArraysCache.MakeMask implements the intended semantics rather than mlx-lm's: a
// position is valid iff it is at or after the row's left padding AND (when prepared)
// before its length. mlx-lm ignores the lengths whenever left padding is set, which lets
// the pad tokens of shorter rows run through their recurrent state in a right-padded
// batched prefill.
//
// # Graphs
//
// Lazy metadata are device arrays, and every mask is one, so a cache needs a graph
// before it holds any array: NewArraysCacheOn and NewBatchKVCacheOn bind one, Merge
// takes the graph of any cache it is given, and a cache otherwise uses the graph of the
// arrays it holds or, lacking any, graph.Default().
//
// # Errors
//
// Merge returns errors (wrapping ErrIncompatible) for inputs it cannot combine. The
// other operations have no error result: misuse by the caller (Extend with a cache of
// another type or policy, a row index out of range, a wrong number of lengths) is a
// programming error and panics with a *UsageError naming the operation.
package cache
