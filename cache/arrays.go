package cache

import (
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/tensor"
)

// ArraysCache is a Gated-DeltaNet layer's recurrent state (mlx-lm's ArraysCache): Conv
// [B, K-1, C] holds the last K-1 conv inputs and SSM [B, Hv, Dv, Dk] float32 the delta-rule
// state. Both are invalid (tensor.Array{}) until the model's first forward sets them.
//
// Two optional per-row fields mask a batch: left padding (set by Merge when every merged
// cache was empty, the leak's trigger) and lengths (set by Prepare). Every forward calls
// Advance, which moves both by the number of tokens consumed.
type ArraysCache struct {
	Conv, SSM tensor.Array

	p       Policy
	g       *graph.Graph
	leftPad meta
	lengths meta
}

// NewArraysCache returns an empty cache with both fields absent. Its device arrays go
// on the graph of its state once set, else graph.Default(); NewArraysCacheOn chooses.
func NewArraysCache(p Policy) *ArraysCache { return NewArraysCacheOn(nil, p) }

// NewArraysCacheOn is NewArraysCache on graph g.
func NewArraysCacheOn(g *graph.Graph, p Policy) *ArraysCache {
	p.check("NewArraysCache")
	return &ArraysCache{p: p, g: g, leftPad: meta{p: p}, lengths: meta{p: p}}
}

// Policy returns the cache's bookkeeping policy.
func (c *ArraysCache) Policy() Policy { return c.p }

// graphOrNil is the graph the cache knows of, if any.
func (c *ArraysCache) graphOrNil() *graph.Graph {
	return firstGraph(c.g, c.Conv, c.SSM, c.leftPad.dev, c.lengths.dev)
}

func (c *ArraysCache) graph() *graph.Graph { return orDefault(c.graphOrNil()) }

// Empty reports whether no state is stored yet.
func (c *ArraysCache) Empty() bool { return !c.Conv.Valid() && !c.SSM.Valid() }

// Len is the batch size: the rows of the state, else of a set field, else 0.
func (c *ArraysCache) Len() int {
	switch {
	case c.Conv.Valid():
		return c.Conv.Dim(0)
	case c.SSM.Valid():
		return c.SSM.Dim(0)
	case c.leftPad.set():
		return c.leftPad.len()
	}
	return c.lengths.len()
}

// rowsOrOne counts a cache that knows no batch size as one row (a fresh single-request
// cache), as mlx-lm's batch_size does.
func (c *ArraysCache) rowsOrOne() int { return max(c.Len(), 1) }

// Armed reports whether left padding or lengths are set: the precondition of the leak.
func (c *ArraysCache) Armed() bool { return c.leftPad.set() || c.lengths.set() }

// Advance records that a forward consumed n tokens: both fields, when set, drop by n.
// Lazy: each is a new Subtract node with a fresh 4-byte scalar, as mlx-lm's
// `lengths -= n; left_padding -= n`; nothing evaluates it unless a mask is read.
//
// The model calls Advance after storing the new Conv and SSM, so Advance also keeps
// them (tensor.Keep): they outlive the step scope they were built in.
func (c *ArraysCache) Advance(n int) {
	tensor.Assign(&c.Conv, c.Conv)
	tensor.Assign(&c.SSM, c.SSM)
	if c.p == Lazy {
		// mlx-lm's `lengths -= n; left_padding -= n`: each a Subtract node with a fresh
		// int32 scalar. Only layer 0's cache has its mask read; in every other GDN
		// layer's cache these links are never evaluated (the dead chain). The census
		// names these two lines.
		if c.lengths.set() {
			tensor.Assign(&c.lengths.dev, tensor.SubScalar(c.lengths.dev, float64(n)))
		}
		if c.leftPad.set() {
			tensor.Assign(&c.leftPad.dev, tensor.SubScalar(c.leftPad.dev, float64(n)))
		}
		return
	}
	c.lengths.sub(n) // host integers: no node, no buffer
	c.leftPad.sub(n)
}

// MakeMask returns bool [B, n] for the next n tokens: position t of row b is valid iff
// t >= leftPad[b] (when set) and t < lengths[b] (when set). It is invalid (Array{})
// when neither field is set.
func (c *ArraysCache) MakeMask(n int) tensor.Array {
	if n < 1 {
		usagePanic("ArraysCache.MakeMask", "%d new tokens", n)
	}
	if !c.Armed() {
		return tensor.Array{}
	}
	g := c.graph()
	if c.p == Eager {
		lp, ln := c.leftPad.host, c.lengths.host
		rows := max(len(lp), len(ln))
		vals := make([]bool, 0, rows*n)
		for b := 0; b < rows; b++ {
			for t := 0; t < n; t++ {
				vals = append(vals, (lp == nil || t >= lp[b]) && (ln == nil || t < ln[b]))
			}
		}
		return tensor.FromBool(g, vals, rows, n)
	}
	pos := tensor.Arange(g, 0, float64(n), 1, tensor.Int32)
	var m tensor.Array
	if c.leftPad.set() {
		m = tensor.GreaterEqual(pos, tensor.ExpandDims(c.leftPad.dev, 1))
	}
	if c.lengths.set() {
		in := tensor.Less(pos, tensor.ExpandDims(c.lengths.dev, 1))
		if m.Valid() {
			in = tensor.LogicalAnd(m, in)
		}
		m = in
	}
	return m
}

// Lengths returns the prepared lengths (Eager: host ints; Lazy: the device array), for
// the model's per-row conv-state pick. Both are absent (nil, Array{}) unless prepared.
func (c *ArraysCache) Lengths() (host []int, dev tensor.Array) {
	if c.p == Eager {
		return append([]int(nil), c.lengths.host...), tensor.Array{}
	}
	return nil, tensor.Share(c.lengths.dev)
}

// Filter keeps rows, in this order (Lazy: the fields get a lazy gather each).
func (c *ArraysCache) Filter(rows []int) {
	checkRows("ArraysCache.Filter", rows, c.rowsOrOne())
	idx := &rowIndex{g: c.graph(), rows: rows}
	tensor.Assign(&c.Conv, idx.take(c.Conv))
	tensor.Assign(&c.SSM, idx.take(c.SSM))
	c.leftPad = c.leftPad.take(idx)
	c.lengths = c.lengths.take(idx)
}

// Extend appends other's rows (an *ArraysCache of the same policy). A side missing a
// state array or field contributes zeros for it, as mlx-lm does (Lazy: a lazy
// Concatenate on the fields).
func (c *ArraysCache) Extend(other Cache) {
	const op = "ArraysCache.Extend"
	o, ok := other.(*ArraysCache)
	if !ok {
		usagePanic(op, "cannot extend with a %T", other)
	}
	if o.p != c.p {
		usagePanic(op, "policies differ (%v and %v)", c.p, o.p)
	}
	g := c.graphOrNil()
	if g == nil {
		g = o.graphOrNil()
	}
	na, nb := c.rowsOrOne(), o.rowsOrOne()
	tensor.Assign(&c.Conv, catState(op, g, c.Conv, o.Conv, na, nb))
	tensor.Assign(&c.SSM, catState(op, g, c.SSM, o.SSM, na, nb))
	c.leftPad = catMeta(g, c.leftPad, o.leftPad, na, nb)
	c.lengths = catMeta(g, c.lengths, o.lengths, na, nb)
	if c.g == nil {
		c.g = g
	}
}

// catState concatenates a and b along rows; a missing side is na (or nb) zero rows.
func catState(op string, g *graph.Graph, a, b tensor.Array, na, nb int) tensor.Array {
	switch {
	case !a.Valid() && !b.Valid():
		return a
	case !a.Valid():
		a = zerosRows(b, na)
	case !b.Valid():
		b = zerosRows(a, nb)
	}
	as, bs := a.Shape(), b.Shape()
	if len(as) != len(bs) || a.DType() != b.DType() {
		usagePanic(op, "states %v and %v differ", a, b)
	}
	for d := 1; d < len(as); d++ {
		if as[d] != bs[d] {
			usagePanic(op, "states %v and %v differ", a, b)
		}
	}
	return tensor.Concatenate(0, a, b)
}

// zerosRows returns zeros shaped like like with n rows.
func zerosRows(like tensor.Array, n int) tensor.Array {
	shape := like.Shape()
	shape[0] = n
	return tensor.Zeros(like.Graph(), like.DType(), shape...)
}

// Extract returns a new single-row cache (same policy, fields absent) whose state views
// that row.
func (c *ArraysCache) Extract(row int) Cache {
	checkRow("ArraysCache.Extract", row, c.rowsOrOne())
	out := NewArraysCacheOn(c.graphOrNil(), c.p)
	if c.Conv.Valid() {
		tensor.Assign(&out.Conv, tensor.SliceAxis(c.Conv, 0, row, row+1))
	}
	if c.SSM.Valid() {
		tensor.Assign(&out.SSM, tensor.SliceAxis(c.SSM, 0, row, row+1))
	}
	return out
}

// Prepare sets the lengths before a right-padded batched prefill: the number of real
// tokens of each row in the coming forward (Lazy: a device array, as mlx-lm's
// mx.array(lengths)).
func (c *ArraysCache) Prepare(lengths []int) {
	const op = "ArraysCache.Prepare"
	if len(lengths) != c.rowsOrOne() {
		usagePanic(op, "%d lengths for %d rows", len(lengths), c.rowsOrOne())
	}
	for _, n := range lengths {
		if n < 0 {
			usagePanic(op, "negative length in %v", lengths)
		}
	}
	c.lengths = newMeta(c.p, c.graph(), lengths)
}

// Finalize resets both fields to absent after a right-padded prefill (the state needs
// no fix: masked steps leave it unchanged).
func (c *ArraysCache) Finalize() {
	c.leftPad = meta{p: c.p}
	c.lengths = meta{p: c.p}
}

// State returns the state arrays that are set and, under Lazy, the set fields.
func (c *ArraysCache) State() []tensor.Array {
	var out []tensor.Array
	for _, a := range []tensor.Array{c.Conv, c.SSM} {
		if a.Valid() {
			out = append(out, a)
		}
	}
	out = append(out, c.leftPad.arrays()...)
	return shared(append(out, c.lengths.arrays()...))
}
