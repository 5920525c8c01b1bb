package cache

import (
	"fmt"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/tensor"
)

// Lazy is mlx-lm's bookkeeping (0.31.3, and main after PR #1632): every per-row field
// is an int32 [B] device array, and every update is a new lazy node on top of the old
// one. This is the leak, in full:
//
// A batch merged from empty caches (mlx-lm's BatchGenerator does this even for one
// request) sets each Gated-DeltaNet layer's left padding to [0]*B. Every forward, each
// GDN layer's ArraysCache.Advance runs `left_padding -= n` (lazyField.sub below): a
// Subtract node holding the previous node and a fresh 4-byte scalar buffer. The model
// reads the SSM mask from layer 0's cache only, so layer 0's chain is evaluated and
// freed every step; nothing ever evaluates the other layers' fields, so each decode
// step adds GDN layers - 1 live buffers, whatever the batch size, until the batch
// drains or the allocator's resource limit (499000 objects) is hit. Bytes stay flat.
// Filter and Extend stack gathers and concatenations on the same unread fields (the
// continuous-batching variant). Eager is the fix.
var Lazy Policy = lazy{}

type lazy struct{}

func (lazy) String() string { return "lazy" }

func (lazy) field(g *graph.Graph, v []int) field {
	if v == nil {
		return &lazyField{}
	}
	return &lazyField{dev: keep(tensor.FromInt32(orDefault(g), int32s(v), len(v)))} // mx.array(v)
}

// lazyField is a field as a device array (invalid when absent). Nothing here
// evaluates except ints, as mlx-lm's .tolist() and .item().
type lazyField struct{ dev tensor.Array }

func (f *lazyField) set() bool { return f.dev.Valid() }

func (f *lazyField) len() int {
	if !f.set() {
		return 0
	}
	return f.dev.Dim(0)
}

func (f *lazyField) add(n int) {
	if f.set() {
		tensor.Assign(&f.dev, tensor.AddScalar(f.dev, float64(n)))
	}
}

// sub is `x -= n`: a Subtract node and a fresh scalar. Called by Advance on every GDN
// layer every step, this is the line that grows the dead chains (the census names it).
func (f *lazyField) sub(n int) {
	if f.set() {
		tensor.Assign(&f.dev, tensor.SubScalar(f.dev, float64(n)))
	}
}

func (f *lazyField) addRows(v *rowVec) {
	if f.set() {
		tensor.Assign(&f.dev, tensor.Add(f.dev, v.array()))
	}
}

func (f *lazyField) subRows(v *rowVec) {
	if f.set() {
		tensor.Assign(&f.dev, tensor.Sub(f.dev, v.array()))
	}
}

func (f *lazyField) take(idx *rowVec) field {
	if !f.set() {
		return &lazyField{}
	}
	return &lazyField{dev: keep(idx.take(f.dev))}
}

func (f *lazyField) cat(g *graph.Graph, o field, nf, no int) field {
	a, b := f.dev, o.(*lazyField).dev
	switch {
	case !a.Valid() && !b.Valid():
		return &lazyField{}
	case !a.Valid():
		a = tensor.Zeros(orDefault(g), tensor.Int32, nf)
	case !b.Valid():
		b = tensor.Zeros(orDefault(g), tensor.Int32, no)
	}
	return &lazyField{dev: keep(tensor.Concatenate(0, a, b))}
}

func (f *lazyField) ints() ([]int, error) {
	if !f.set() {
		return nil, nil
	}
	v, err := f.dev.Int32s() // evaluates the chain
	if err != nil {
		return nil, fmt.Errorf("cache: reading metadata: %w", err)
	}
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out, nil
}

func (f *lazyField) release() {
	tensor.Release(f.dev)
	f.dev = tensor.Array{}
}

// array hands out the field itself: a consumer that evaluates it consumes its chain.
func (f *lazyField) array(*graph.Graph) tensor.Array { return tensor.Share(f.dev) }

func (f *lazyField) arrays() []tensor.Array {
	if !f.set() {
		return nil
	}
	return []tensor.Array{f.dev}
}
