// Package generate runs greedy decoding over a Qwen3.5 model two ways, as mlx-lm does.
//
// Plain is mlx-lm's generate_step: one sequence over fresh caches (make_prompt_cache).
// The recurrent caches' padding fields are never set there, so their advance does
// nothing and nothing leaks.
//
// BatchGenerator is mlx-lm's server path: requests are inserted, their fresh caches
// merged into a prompt batch (even a single request), prefilled right-padded
// (prepare/finalize only when row lengths differ), then decoded step by step. Each step builds the next token's graph while the
// current one is still computing (AsyncEval), evaluates only the tokens, extracts and
// filters out finished rows, and merges and extends new requests in (continuous
// batching). Under cache.Lazy this path leaks (see cache.Lazy); under cache.Eager it
// does not.
package generate
