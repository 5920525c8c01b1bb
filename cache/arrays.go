package cache

import (
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/tensor"
)

// ArraysCache is a Gated-DeltaNet layer's recurrent state (mlx-lm's ArraysCache): the
// conv state [B, K-1, C] holds the last K-1 conv inputs and the SSM state
// [B, Hv, Dv, Dk] float32 the delta-rule state. Both are invalid until the model's
// first forward stores them with Update.
//
// Two optional per-row fields mask a batch: left padding (set by Merge when every merged
// cache was empty: what arms the leak told at Lazy) and lengths (set by Prepare). Every
// forward advances both by the number of tokens consumed.
type ArraysCache struct {
	conv, ssm tensor.Array

	p       Policy
	g       *graph.Graph
	leftPad field
	lengths field
}

// NewArraysCache returns an empty cache with both fields absent. Its device arrays go
// on the graph of its state once set, else graph.Default(); NewArraysCacheOn chooses.
func NewArraysCache(p Policy) *ArraysCache { return NewArraysCacheOn(nil, p) }

// NewArraysCacheOn is NewArraysCache on graph g.
func NewArraysCacheOn(g *graph.Graph, p Policy) *ArraysCache {
	checkPolicy("NewArraysCache", p)
	return &ArraysCache{p: p, g: g, leftPad: p.field(g, nil), lengths: p.field(g, nil)}
}

// Policy returns the cache's bookkeeping policy.
func (c *ArraysCache) Policy() Policy {
	if c == nil {
		return nil
	}
	return c.p
}

// graphOrNil is the graph the cache knows of, if any.
func (c *ArraysCache) graphOrNil() *graph.Graph {
	if c == nil {
		return nil
	}
	if g := firstGraph(c.g, c.conv, c.ssm); g != nil {
		return g
	}
	return firstGraph(nil, append(c.leftPad.arrays(), c.lengths.arrays()...)...)
}

func (c *ArraysCache) graph() *graph.Graph { return orDefault(c.graphOrNil()) }

// Empty reports whether no state is stored yet.
func (c *ArraysCache) Empty() bool { return !c.conv.Valid() && !c.ssm.Valid() }

// Len is the batch size: the rows of the state, else of a set field, else 0.
func (c *ArraysCache) Len() int {
	switch {
	case c.conv.Valid():
		return c.conv.Dim(0)
	case c.ssm.Valid():
		return c.ssm.Dim(0)
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

// ConvState returns the conv state (invalid until stored).
func (c *ArraysCache) ConvState() tensor.Array { return tensor.Share(c.conv) }

// SSMState returns the recurrent state (invalid until stored).
func (c *ArraysCache) SSMState() tensor.Array { return tensor.Share(c.ssm) }

// Update stores the states a forward over n tokens leaves and advances the fields by n
// (see Advance). The states outlive the step scope they were built in.
func (c *ArraysCache) Update(conv, ssm tensor.Array, n int) {
	tensor.Assign(&c.conv, conv)
	tensor.Assign(&c.ssm, ssm)
	c.Advance(n)
}

// Advance records that a forward consumed n tokens: both fields, when set, drop by n
// (mlx-lm's `lengths -= n; left_padding -= n`; under Lazy, the leak's line).
func (c *ArraysCache) Advance(n int) {
	c.lengths.sub(n)
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
	pos := tensor.Arange(g, 0, float64(n), 1, tensor.Int32)
	var m tensor.Array
	if c.leftPad.set() {
		m = tensor.GreaterEqual(pos, tensor.ExpandDims(c.leftPad.array(g), 1))
	}
	if c.lengths.set() {
		in := tensor.Less(pos, tensor.ExpandDims(c.lengths.array(g), 1))
		if m.Valid() {
			in = tensor.LogicalAnd(m, in)
		}
		m = in
	}
	return m
}

// Lengths returns the prepared lengths as int32 [B], for the model's per-row conv-state
// pick; invalid unless prepared.
func (c *ArraysCache) Lengths() tensor.Array {
	if !c.lengths.set() {
		return tensor.Array{}
	}
	return c.lengths.array(c.graph())
}

// Filter keeps rows, in this order (Lazy: the fields get a lazy gather each).
func (c *ArraysCache) Filter(rows []int) {
	checkRows("ArraysCache.Filter", rows, c.rowsOrOne())
	idx := &rowVec{g: c.graph(), vals: rows}
	defer idx.release()
	tensor.Assign(&c.conv, idx.take(c.conv))
	tensor.Assign(&c.ssm, idx.take(c.ssm))
	setField(&c.leftPad, c.leftPad.take(idx))
	setField(&c.lengths, c.lengths.take(idx))
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
	tensor.Assign(&c.conv, catState(op, g, c.conv, o.conv, na, nb))
	tensor.Assign(&c.ssm, catState(op, g, c.ssm, o.ssm, na, nb))
	setField(&c.leftPad, c.leftPad.cat(g, o.leftPad, na, nb))
	setField(&c.lengths, c.lengths.cat(g, o.lengths, na, nb))
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
	if c.conv.Valid() {
		tensor.Assign(&out.conv, tensor.SliceAxis(c.conv, 0, row, row+1))
	}
	if c.ssm.Valid() {
		tensor.Assign(&out.ssm, tensor.SliceAxis(c.ssm, 0, row, row+1))
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
	setField(&c.lengths, c.p.field(c.graph(), lengths))
}

// Finalize resets both fields to absent after a right-padded prefill (the state needs
// no fix: masked steps leave it unchanged).
func (c *ArraysCache) Finalize() {
	setField(&c.leftPad, c.p.field(nil, nil))
	setField(&c.lengths, c.p.field(nil, nil))
}

// State returns the state arrays that are set and, under Lazy, the set fields.
func (c *ArraysCache) State() []tensor.Array {
	var out []tensor.Array
	for _, a := range []tensor.Array{c.conv, c.ssm} {
		if a.Valid() {
			out = append(out, a)
		}
	}
	out = append(out, c.leftPad.arrays()...)
	return shared(append(out, c.lengths.arrays()...))
}

// Release drops the state arrays and the fields (see Cache).
func (c *ArraysCache) Release() {
	tensor.Release(c.conv)
	tensor.Release(c.ssm)
	c.conv, c.ssm = tensor.Array{}, tensor.Array{}
	c.leftPad.release()
	c.lengths.release()
}
