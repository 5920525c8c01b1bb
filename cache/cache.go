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
}

var (
	_ Cache = (*KVCache)(nil)
	_ Cache = (*BatchKVCache)(nil)
	_ Cache = (*ArraysCache)(nil)
)
