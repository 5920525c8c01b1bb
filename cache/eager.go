package cache

import (
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/tensor"
)

// Eager is the fix for the leak told at Lazy: every per-row field is host ints.
// Updates (Advance's `left_padding -= n`, Filter, Extend, Finalize) are integer
// arithmetic that makes no node and no buffer, and a device array is made only when a
// consumer reads a field (a mask, the RoPE offsets), for the step that consumes it.
// Values are the same as Lazy's, so model outputs are bit-identical.
var Eager Policy = eager{}

type eager struct{}

func (eager) String() string { return "eager" }

func (eager) field(_ *graph.Graph, v []int) field {
	if v == nil {
		return &eagerField{}
	}
	return &eagerField{host: append(make([]int, 0, len(v)), v...)}
}

// eagerField is a field as host ints (nil when absent). Its slice is never shared:
// every operation that returns values or fields copies.
type eagerField struct{ host []int }

func (f *eagerField) set() bool { return f.host != nil }

func (f *eagerField) len() int { return len(f.host) }

func (f *eagerField) add(n int) {
	for i := range f.host {
		f.host[i] += n
	}
}

// sub is `x -= n` on host ints: no node, no buffer.
func (f *eagerField) sub(n int) { f.add(-n) }

func (f *eagerField) addRows(v *rowVec) {
	for i := range f.host {
		f.host[i] += v.vals[i]
	}
}

func (f *eagerField) subRows(v *rowVec) {
	for i := range f.host {
		f.host[i] -= v.vals[i]
	}
}

// release has nothing to drop: host ints are Go memory.
func (f *eagerField) release() {}

func (f *eagerField) take(idx *rowVec) field {
	if !f.set() {
		return &eagerField{}
	}
	out := make([]int, len(idx.vals))
	for i, r := range idx.vals {
		out[i] = f.host[r]
	}
	return &eagerField{host: out}
}

func (f *eagerField) cat(_ *graph.Graph, o field, nf, no int) field {
	a, b := f.host, o.(*eagerField).host
	if a == nil && b == nil {
		return &eagerField{}
	}
	if a == nil {
		a = make([]int, nf)
	}
	if b == nil {
		b = make([]int, no)
	}
	return &eagerField{host: append(append(make([]int, 0, len(a)+len(b)), a...), b...)}
}

func (f *eagerField) ints() ([]int, error) {
	if !f.set() {
		return nil, nil
	}
	return append([]int(nil), f.host...), nil
}

// array makes a fresh device array for this step's consumer.
func (f *eagerField) array(g *graph.Graph) tensor.Array {
	if !f.set() {
		return tensor.Array{}
	}
	return tensor.FromInt32(orDefault(g), int32s(f.host), len(f.host))
}

func (f *eagerField) arrays() []tensor.Array { return nil }
