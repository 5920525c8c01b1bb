// Package cache holds the per-layer caches of a Qwen3.5 / Qwen3-Next forward pass: the
// attention KV caches (KVCache for one sequence, BatchKVCache for a left-padded batch,
// both an Attention) and the Gated-DeltaNet recurrent-state cache (ArraysCache), with
// mlx-lm's merge, filter, extend, extract, prepare and finalize operations for batched
// generation.
//
// # Two bookkeeping policies
//
// The per-row metadata of a batch (left padding, prepared lengths, RoPE offsets) are
// kept under one of two policies, each a type in its own file: Lazy (lazy.go, mlx-lm's
// int32 device arrays; its doc tells the leak) and Eager (eager.go, host ints; the
// fix). The caches hold their metadata as fields of their policy and never branch on
// it. Both give the same masks and offsets (values), so model outputs are
// bit-identical.
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
// Merge returns errors (wrapping ErrIncompatible; a *MixedPoliciesError when an input
// cache has another policy) for inputs it cannot combine. The other operations have no
// error result: misuse by the caller (Extend with a cache of another type or policy, a
// row index out of range, a wrong number of lengths) is a programming error and panics
// with a *UsageError naming the operation.
package cache
