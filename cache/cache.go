package cache

import (
	"github.com/ingotml/ingot/tensor"
)

// Cache is one layer's cache.
type Cache interface {
	// Empty reports whether nothing is stored yet.
	Empty() bool
	// Len is the batch size (rows); 0 when empty and unknown.
	Len() int
	// Filter keeps these rows, in this order.
	Filter(rows []int)
	// Extend appends other's rows (other must have the same concrete type).
	Extend(other Cache)
	// Extract returns a new single-row cache holding that row (a plain KVCache for
	// attention).
	Extract(row int) Cache
	// Prepare is called before a right-padded batched prefill with the true number of
	// new tokens of each row.
	Prepare(lengths []int)
	// Finalize is called after that prefill.
	Finalize()
	// State returns every array the cache holds (state and metadata), for evaluating all
	// cache state and for tests.
	State() []tensor.Array
	// Release drops every array the cache holds now instead of when a collection finds
	// the cache unreachable (a batch generator drops a merged prompt cache once its
	// rows are extended into the batch). The cache must not be used afterwards.
	Release()
}

// Attention is an attention layer's cache, what the model's attention reads and
// writes: *KVCache (one sequence) or *BatchKVCache (a left-padded batch).
type Attention interface {
	Cache
	// Offsets returns int32 [rows]: each row's RoPE position of its next token. rows
	// is the batch size of the coming forward.
	Offsets(rows int) tensor.Array
	// MakeMask returns the attention mask for n new tokens, broadcastable to
	// [B, 1, n, stored+n], or an invalid array when every key is visible.
	MakeMask(n int) tensor.Array
	// UpdateAndFetch appends keys and values [B, Hkv, n, D] and returns all those
	// stored so far, [B, Hkv, stored+n, D].
	UpdateAndFetch(k, v tensor.Array) (keys, values tensor.Array)
}

var (
	_ Attention = (*KVCache)(nil)
	_ Attention = (*BatchKVCache)(nil)
	_ Cache     = (*ArraysCache)(nil)
)

// EvalState evaluates every array the caches hold (State): what mlx-lm's
// mx.eval([c.state for c in cache]) does between prefill chunks, and the repro's
// --eval-cache-every probe.
func EvalState(cs []Cache) error {
	var all []tensor.Array
	for _, c := range cs {
		for _, a := range c.State() {
			if a.Valid() {
				all = append(all, a)
			}
		}
	}
	defer func() {
		for _, a := range all {
			tensor.Release(a) // State's references: dropped now, as the graph's contract asks
		}
	}()
	return tensor.Eval(all...)
}
