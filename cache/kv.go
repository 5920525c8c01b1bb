package cache

import (
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/tensor"
)

// step is the KV storage growth quantum (mlx-lm's KVCache.step).
const step = 256

// KVStep is the KV storage growth quantum: attention storage grows by whole steps of
// this many positions (the memory estimate, package predict, counts in it).
const KVStep = step

// kvStore is attention storage: keys [B, H, cap, Dk] and values [B, H, cap, Dv], with
// cap a multiple of step except right after a merge, extract or extend.
type kvStore struct{ keys, values tensor.Array }

// release drops both arrays now (see Cache.Release).
func (s *kvStore) release() {
	tensor.Release(s.keys)
	tensor.Release(s.values)
	*s = kvStore{}
}

// write stores k, v [B, H, S, D] at time position prev, growing the storage by whole
// steps as mlx-lm does (zero buffers concatenated after the used part), and returns
// views of the first prev+S positions.
func (s *kvStore) write(op string, prev int, k, v tensor.Array) (keys, values tensor.Array) {
	if !k.Valid() || !v.Valid() || k.NDim() != 4 || v.NDim() != 4 {
		usagePanic(op, "keys and values must be [B, H, S, D], got %v and %v", k, v)
	}
	kb, vb := k.Shape(), v.Shape()
	if kb[0] != vb[0] || kb[1] != vb[1] || kb[2] != vb[2] {
		usagePanic(op, "keys %v and values %v differ in B, H or S", kb, vb)
	}
	if s.keys.Valid() {
		ks, vs := s.keys.Shape(), s.values.Shape()
		if ks[0] != kb[0] || ks[1] != kb[1] || ks[3] != kb[3] || vs[3] != vb[3] {
			usagePanic(op, "keys %v and values %v do not fit the stored %v and %v", kb, vb, ks, vs)
		}
	}
	n := kb[2]
	if !s.keys.Valid() || prev+n > s.keys.Dim(2) {
		steps := (step + n - 1) / step
		g := k.Graph()
		newK := tensor.Zeros(g, k.DType(), kb[0], kb[1], steps*step, kb[3])
		newV := tensor.Zeros(g, v.DType(), vb[0], vb[1], steps*step, vb[3])
		if s.keys.Valid() {
			// Assign, not =: the storage replaced is released now, not at a collection.
			if prev%step != 0 {
				tensor.Assign(&s.keys, tensor.SliceAxis(s.keys, 2, 0, prev))
				tensor.Assign(&s.values, tensor.SliceAxis(s.values, 2, 0, prev))
			}
			tensor.Assign(&s.keys, tensor.Concatenate(2, s.keys, newK))
			tensor.Assign(&s.values, tensor.Concatenate(2, s.values, newV))
		} else {
			s.keys, s.values = newK, newV
		}
	}
	tensor.Assign(&s.keys, tensor.SliceUpdate(s.keys, k, []int{0, 0, prev, 0}))
	tensor.Assign(&s.values, tensor.SliceUpdate(s.values, v, []int{0, 0, prev, 0}))
	return tensor.SliceAxis(s.keys, 2, 0, prev+n), tensor.SliceAxis(s.values, 2, 0, prev+n)
}

func (s *kvStore) rows() int {
	if s.keys.Valid() {
		return s.keys.Dim(0)
	}
	return 0
}

func (s *kvStore) arrays() []tensor.Array {
	if s.keys.Valid() {
		return []tensor.Array{s.keys, s.values}
	}
	return nil
}

// KVCache is a single-sequence attention cache (the plain generation path, and what
// Extract returns): keys and values of every position so far, all rows the same length.
type KVCache struct {
	s      kvStore
	offset int
	g      *graph.Graph // bound graph, for Merge of empty caches; may be nil
}

// NewKVCache returns an empty KVCache.
func NewKVCache() *KVCache { return &KVCache{} }

// NewKVCacheOn returns an empty KVCache bound to g: a Merge of empty caches then puts
// the batch's metadata on g (a KVCache itself needs no graph until it stores keys).
func NewKVCacheOn(g *graph.Graph) *KVCache { return &KVCache{g: g} }

// Offset is the number of positions stored.
func (c *KVCache) Offset() int { return c.offset }

// graphOrNil is the graph the cache knows of, if any.
func (c *KVCache) graphOrNil() *graph.Graph {
	if c == nil {
		return nil
	}
	return firstGraph(c.g, c.s.keys)
}

// Offsets returns int32 [rows] holding Offset in every row: the RoPE position of the
// next token (rows is the batch size of the coming forward).
func (c *KVCache) Offsets(rows int) tensor.Array {
	v := make([]int32, rows)
	for i := range v {
		v[i] = int32(c.offset)
	}
	return tensor.FromInt32(orDefault(c.graphOrNil()), v, rows)
}

// MakeMask returns the causal mask for n new tokens (CausalMask after Offset
// positions), or an invalid array when n is 1 (one new token sees every key).
func (c *KVCache) MakeMask(n int) tensor.Array {
	if n < 1 {
		usagePanic("KVCache.MakeMask", "%d new tokens", n)
	}
	if n == 1 {
		return tensor.Array{}
	}
	return CausalMask(orDefault(c.graphOrNil()), n, c.offset)
}

// CausalMask is bool [1, 1, n, offset+n]: query i (at position offset+i) sees keys
// 0..offset+i.
func CausalMask(g *graph.Graph, n, offset int) tensor.Array {
	t := offset + n
	v := make([]bool, n*t)
	for i := 0; i < n; i++ {
		for j := 0; j <= offset+i; j++ {
			v[i*t+j] = true
		}
	}
	return tensor.FromBool(g, v, 1, 1, n, t)
}

// UpdateAndFetch appends k, v [B, Hkv, S, D] and returns all keys and values so far,
// [B, Hkv, offset+S, D] (offset before the call).
func (c *KVCache) UpdateAndFetch(k, v tensor.Array) (keys, values tensor.Array) {
	keys, values = c.s.write("KVCache.UpdateAndFetch", c.offset, k, v)
	c.offset += k.Dim(2)
	return keys, values
}

// Empty reports whether nothing is stored yet.
func (c *KVCache) Empty() bool { return !c.s.keys.Valid() }

// Len is the number of rows, 0 when empty.
func (c *KVCache) Len() int { return c.s.rows() }

// rowsOrOne counts an empty cache as one row (a fresh single-request cache).
func (c *KVCache) rowsOrOne() int { return max(c.Len(), 1) }

// Filter keeps rows, in this order. An empty cache has nothing to filter.
func (c *KVCache) Filter(rows []int) {
	checkRows("KVCache.Filter", rows, c.rowsOrOne())
	if c.Empty() {
		return
	}
	idx := &rowVec{g: c.s.keys.Graph(), vals: rows}
	defer idx.release()
	tensor.Assign(&c.s.keys, idx.take(c.s.keys))
	tensor.Assign(&c.s.values, idx.take(c.s.values))
}

// Extend appends other's rows; other must be a *KVCache of the same offset (caches of
// different lengths are batched with Merge instead).
func (c *KVCache) Extend(other Cache) {
	o, ok := other.(*KVCache)
	if !ok {
		usagePanic("KVCache.Extend", "cannot extend with a %T", other)
	}
	switch {
	case o.Empty():
		return
	case c.Empty():
		// Own references: o may be released (Cache.Release) while c lives on.
		c.s, c.offset = kvStore{keep(tensor.Share(o.s.keys)), keep(tensor.Share(o.s.values))}, o.offset
		return
	case o.offset != c.offset:
		usagePanic("KVCache.Extend", "offsets differ (%d and %d): batch caches of different lengths with Merge", c.offset, o.offset)
	}
	a, b := c.stored(), o.stored()
	tensor.Assign(&c.s.keys, tensor.Concatenate(0, a.keys, b.keys))
	tensor.Assign(&c.s.values, tensor.Concatenate(0, a.values, b.values))
}

// stored returns views of the used positions.
func (c *KVCache) stored() kvStore {
	return kvStore{tensor.SliceAxis(c.s.keys, 2, 0, c.offset), tensor.SliceAxis(c.s.values, 2, 0, c.offset)}
}

// Extract returns a new single-row KVCache holding a copy of that row.
func (c *KVCache) Extract(row int) Cache {
	checkRow("KVCache.Extract", row, c.rowsOrOne())
	out := NewKVCacheOn(c.g)
	if c.Empty() {
		return out
	}
	st := c.stored()
	tensor.Assign(&out.s.keys, tensor.Contiguous(tensor.SliceAxis(st.keys, 0, row, row+1)))
	tensor.Assign(&out.s.values, tensor.Contiguous(tensor.SliceAxis(st.values, 0, row, row+1)))
	out.offset = c.offset
	return out
}

// Prepare does nothing: a KVCache has no per-row padding, so all its rows must have the
// same length (lengths must have one entry per row).
func (c *KVCache) Prepare(lengths []int) {
	if len(lengths) != c.rowsOrOne() {
		usagePanic("KVCache.Prepare", "%d lengths for %d rows", len(lengths), c.rowsOrOne())
	}
}

// Finalize does nothing (see Prepare).
func (c *KVCache) Finalize() {}

// State returns the stored keys and values arrays (whole storage), none when empty.
func (c *KVCache) State() []tensor.Array { return shared(c.s.arrays()) }

// Release drops the keys and the values (see Cache).
func (c *KVCache) Release() { c.s.release() }
