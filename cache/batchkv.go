package cache

import (
	"slices"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/tensor"
)

// BatchKVCache is a batched attention cache whose rows are left-padded to a common
// length (mlx-lm's BatchKVCache). Row b's valid positions are [leftPad[b], stored); its
// RoPE position of the next token is stored - leftPad[b].
type BatchKVCache struct {
	p   Policy
	g   *graph.Graph
	s   kvStore
	idx int // positions stored per row, padding included (mlx-lm's _idx)

	leftPad field
	// offset is stored - leftPad, moved along with them as mlx-lm does; under Lazy RoPE
	// reads it every step, so its chain never grows.
	offset field

	// end is set by Prepare: key positions >= end[b] are row b's right padding.
	end     field
	endHost []int // host copy of end for Finalize; nil unless prepared
}

// NewBatchKVCache returns an empty batch cache with one left padding per row, on the
// graph of the first keys it gets (Lazy: on graph.Default(), since its metadata are
// device arrays from the start; use NewBatchKVCacheOn to choose).
func NewBatchKVCache(p Policy, leftPadding []int) *BatchKVCache {
	return NewBatchKVCacheOn(nil, p, leftPadding)
}

// NewBatchKVCacheOn is NewBatchKVCache on graph g.
func NewBatchKVCacheOn(g *graph.Graph, p Policy, leftPadding []int) *BatchKVCache {
	checkPolicy("NewBatchKVCache", p)
	if len(leftPadding) == 0 {
		usagePanic("NewBatchKVCache", "no rows (one left padding per row)")
	}
	neg := make([]int, len(leftPadding)) // the offsets: no position stored yet
	for i, x := range leftPadding {
		if x < 0 {
			usagePanic("NewBatchKVCache", "negative left padding in %v", leftPadding)
		}
		neg[i] = -x
	}
	return &BatchKVCache{p: p, g: g, leftPad: p.field(g, leftPadding), offset: p.field(g, neg), end: p.field(g, nil)}
}

// Policy returns the cache's bookkeeping policy.
func (c *BatchKVCache) Policy() Policy {
	if c == nil {
		return nil
	}
	return c.p
}

// graphOrNil is the graph the cache knows of, if any.
func (c *BatchKVCache) graphOrNil() *graph.Graph {
	if c == nil {
		return nil
	}
	if g := firstGraph(c.g, c.s.keys); g != nil {
		return g
	}
	return firstGraph(nil, c.offset.arrays()...)
}

func (c *BatchKVCache) graph() *graph.Graph { return orDefault(c.graphOrNil()) }

// Empty reports whether nothing is stored yet.
func (c *BatchKVCache) Empty() bool { return !c.s.keys.Valid() }

// Len is the number of rows.
func (c *BatchKVCache) Len() int { return c.leftPad.len() }

// UpdateAndFetch appends k, v [B, Hkv, S, D] and returns all keys and values stored so
// far, padding included: [B, Hkv, stored+S, D].
func (c *BatchKVCache) UpdateAndFetch(k, v tensor.Array) (keys, values tensor.Array) {
	const op = "BatchKVCache.UpdateAndFetch"
	if k.Valid() && k.Dim(0) != c.Len() {
		usagePanic(op, "keys %v for a batch of %d", k.Shape(), c.Len())
	}
	if g := c.graphOrNil(); k.Valid() && g != nil && k.Graph() != g {
		usagePanic(op, "keys from another graph")
	}
	keys, values = c.s.write(op, c.idx, k, v)
	n := k.Dim(2)
	c.idx += n
	c.offset.add(n)
	return keys, values
}

// Offsets returns int32 [B]: the RoPE position of the first new token of each row
// (rows must be B). Under Lazy it is the device array itself: the model reads it every
// step, which consumes its chain.
func (c *BatchKVCache) Offsets(rows int) tensor.Array {
	if rows != c.Len() {
		usagePanic("BatchKVCache.Offsets", "%d rows for a batch of %d", rows, c.Len())
	}
	return c.offset.array(c.graph())
}

// MakeMask returns bool [B, 1, n, stored+n], the attention mask for n new tokens: key
// position j is visible to query i of row b iff j <= stored+i (causal), j >=
// leftPad[b], and, when prepared, j < end[b] = (positions stored at Prepare) +
// lengths[b], i.e. not right padding. For a batch merged from empty caches end[b] is
// leftPad[b] + lengths[b] (both paddings 0).
func (c *BatchKVCache) MakeMask(n int) tensor.Array {
	if n < 1 {
		usagePanic("BatchKVCache.MakeMask", "%d new tokens", n)
	}
	g := c.graph()
	t := c.idx + n
	rinds := tensor.Arange(g, 0, float64(t), 1, tensor.Int32)
	linds := rinds
	if c.idx > 0 {
		linds = tensor.Arange(g, float64(c.idx), float64(t), 1, tensor.Int32)
	}
	m := tensor.GreaterEqual(tensor.ExpandDims(linds, 1), tensor.ExpandDims(rinds, 0))
	m = tensor.LogicalAnd(m, tensor.GreaterEqual(rinds, perRow4(c.leftPad.array(g))))
	if c.end.set() {
		m = tensor.LogicalAnd(m, tensor.Less(rinds, perRow4(c.end.array(g))))
	}
	return m
}

// perRow4 views a [B] array as [B, 1, 1, 1].
func perRow4(a tensor.Array) tensor.Array {
	return tensor.ExpandDims(tensor.ExpandDims(tensor.ExpandDims(a, 1), 2), 3)
}

// Prepare is called before a right-padded batched prefill: lengths[b] of the coming
// tokens of row b are real, the rest right padding, masked until Finalize moves it left.
func (c *BatchKVCache) Prepare(lengths []int) {
	const op = "BatchKVCache.Prepare"
	if len(lengths) != c.Len() {
		usagePanic(op, "%d lengths for %d rows", len(lengths), c.Len())
	}
	end := make([]int, len(lengths))
	for b, n := range lengths {
		if n < 0 {
			usagePanic(op, "negative length in %v", lengths)
		}
		end[b] = c.idx + n
	}
	c.endHost = end
	setField(&c.end, c.p.field(c.graph(), end))
}

// Finalize is called after a right-padded prefill: each row's right padding is rolled
// to its front (keys and values rotate right along time) and added to its left padding.
func (c *BatchKVCache) Finalize() {
	if c.endHost == nil {
		return
	}
	pad := make([]int, len(c.endHost))
	padded := false
	for b, e := range c.endHost {
		pad[b] = max(0, c.idx-e)
		padded = padded || pad[b] > 0
	}
	c.endHost = nil
	setField(&c.end, c.p.field(nil, nil))
	if !padded {
		return
	}
	if !c.Empty() {
		tensor.Assign(&c.s.keys, rollRows(c.s.keys, pad))
		tensor.Assign(&c.s.values, rollRows(c.s.values, pad))
	}
	pv := &rowVec{g: c.graph(), vals: pad}
	defer pv.release()
	c.offset.subRows(pv)
	c.leftPad.addRows(pv)
}

// rollRows rotates row b of a [B, H, T, D] right by shifts[b] along time (as mlx-lm's
// dynamic_roll over the whole storage).
func rollRows(a tensor.Array, shifts []int) tensor.Array {
	n := a.Dim(2)
	rows := make([]tensor.Array, len(shifts))
	for b, s := range shifts {
		r := tensor.SliceAxis(a, 0, b, b+1)
		if s %= n; s > 0 {
			r = tensor.Concatenate(2, tensor.SliceAxis(r, 2, n-s, n), tensor.SliceAxis(r, 2, 0, n-s))
		}
		rows[b] = r
	}
	return tensor.Concatenate(0, rows...)
}

// Filter keeps rows, in this order, then drops the padding columns every kept row has.
func (c *BatchKVCache) Filter(rows []int) {
	checkRows("BatchKVCache.Filter", rows, c.Len())
	idx := &rowVec{g: c.graph(), vals: rows}
	defer idx.release()
	tensor.Assign(&c.s.keys, idx.take(c.s.keys))
	tensor.Assign(&c.s.values, idx.take(c.s.values))
	setField(&c.leftPad, c.leftPad.take(idx))
	setField(&c.offset, c.offset.take(idx))
	if c.endHost != nil {
		end := make([]int, len(rows))
		for i, r := range rows {
			end[i] = c.endHost[r]
		}
		c.endHost = end
		setField(&c.end, c.end.take(idx))
	}
	if c.Empty() {
		return
	}
	// mlx-lm reads the minimum back (.item()); a failure here is an allocator error
	// carried by the gathered metadata, which the next step's eval reports.
	lp, err := c.leftPad.ints()
	if err != nil {
		return
	}
	minPad := slices.Min(lp)
	if minPad <= 0 {
		return
	}
	cp := c.s.keys.Dim(2)
	tensor.Assign(&c.s.keys, tensor.SliceAxis(c.s.keys, 2, minPad, cp))
	tensor.Assign(&c.s.values, tensor.SliceAxis(c.s.values, 2, minPad, cp))
	c.idx -= minPad
	c.leftPad.sub(minPad)
	if c.endHost != nil {
		for i := range c.endHost {
			c.endHost[i] -= minPad
		}
		c.end.sub(minPad)
	}
}

// Extend appends other's rows (a *BatchKVCache of the same policy), right-aligning both
// at the longer stored length with extra left padding, as mlx-lm does.
func (c *BatchKVCache) Extend(other Cache) {
	const op = "BatchKVCache.Extend"
	o, ok := other.(*BatchKVCache)
	if !ok {
		usagePanic(op, "cannot extend with a %T", other)
	}
	if o.p != c.p {
		usagePanic(op, "policies differ (%v and %v)", c.p, o.p)
	}
	if c.endHost != nil || o.endHost != nil {
		usagePanic(op, "a prepared cache cannot be extended (Finalize first)")
	}
	g := c.graph()
	if c.Empty() && o.Empty() {
		setField(&c.leftPad, c.leftPad.cat(g, o.leftPad, c.Len(), o.Len()))
		setField(&c.offset, c.offset.cat(g, o.offset, c.Len(), o.Len()))
		return
	}
	ref := c.s
	if c.Empty() {
		ref = o.s
	}
	ks, vs := ref.keys.Shape(), ref.values.Shape()
	if !c.Empty() && !o.Empty() {
		oks, ovs := o.s.keys.Shape(), o.s.values.Shape()
		if oks[1] != ks[1] || oks[3] != ks[3] || ovs[3] != vs[3] {
			usagePanic(op, "keys %v / values %v do not fit %v / %v", oks, ovs, ks, vs)
		}
	}
	maxIdx := max(c.idx, o.idx)
	maxSize := 0
	for _, x := range []*BatchKVCache{c, o} {
		if !x.Empty() {
			maxSize = max(maxSize, x.s.keys.Dim(2))
		}
	}
	// pad right-aligns x's keys and values at maxIdx and adds the left padding to x's
	// own field (x is c, or o which Extend consumes).
	pad := func(x *BatchKVCache) (k, v tensor.Array) {
		left := maxIdx - x.idx
		k, v = x.s.keys, x.s.values
		size := 0
		if !x.Empty() {
			size = k.Dim(2)
		}
		right := maxSize - size - left
		if right < 0 {
			k = tensor.SliceAxis(k, 2, 0, size+right)
			v = tensor.SliceAxis(v, 2, 0, size+right)
			right = 0
		}
		k = padTime(g, k, ref.keys, x.Len(), ks[3], left, right)
		v = padTime(g, v, ref.values, x.Len(), vs[3], left, right)
		x.leftPad.add(left)
		return k, v
	}
	kc, vc := pad(c)
	ko, vo := pad(o)
	tensor.Assign(&c.s.keys, tensor.Concatenate(0, kc, ko))
	tensor.Assign(&c.s.values, tensor.Concatenate(0, vc, vo))
	setField(&c.offset, c.offset.cat(g, o.offset, 0, 0))
	setField(&c.leftPad, c.leftPad.cat(g, o.leftPad, 0, 0))
	c.idx = maxIdx
}

// padTime adds left and right zero columns along time to a (invalid: rows x 0
// columns), shaped and typed like ref in the other dimensions.
func padTime(g *graph.Graph, a, ref tensor.Array, rows, d, left, right int) tensor.Array {
	h, dt := ref.Dim(1), ref.DType()
	var parts []tensor.Array
	if left > 0 {
		parts = append(parts, tensor.Zeros(g, dt, rows, h, left, d))
	}
	if a.Valid() {
		parts = append(parts, a)
	}
	if right > 0 {
		parts = append(parts, tensor.Zeros(g, dt, rows, h, right, d))
	}
	return tensor.Concatenate(2, parts...)
}

// Extract returns a plain KVCache holding a copy of row's valid positions. Lazy reads
// the left padding back (evaluating it), as mlx-lm does; an allocator failure there
// panics with the wrapped error.
func (c *BatchKVCache) Extract(row int) Cache {
	checkRow("BatchKVCache.Extract", row, c.Len())
	out := NewKVCacheOn(c.graph())
	if c.Empty() {
		return out
	}
	lp, err := c.leftPad.ints()
	if err != nil {
		panic(err)
	}
	p := min(max(lp[row], 0), c.idx)
	if p == c.idx {
		return out
	}
	ks := c.s.keys.Shape()
	vs := c.s.values.Shape()
	tensor.Assign(&out.s.keys, tensor.Contiguous(tensor.Slice(c.s.keys, []int{row, 0, p}, []int{row + 1, ks[1], c.idx})))
	tensor.Assign(&out.s.values, tensor.Contiguous(tensor.Slice(c.s.values, []int{row, 0, p}, []int{row + 1, vs[1], c.idx})))
	out.offset = c.idx - p
	return out
}

// State returns the stored keys and values and, under Lazy, the metadata arrays.
func (c *BatchKVCache) State() []tensor.Array {
	out := append(c.s.arrays(), c.offset.arrays()...)
	out = append(out, c.leftPad.arrays()...)
	return shared(append(out, c.end.arrays()...))
}

// Release drops the keys, the values and the fields (see Cache).
func (c *BatchKVCache) Release() {
	c.s.release()
	c.offset.release()
	c.leftPad.release()
	c.end.release()
}
