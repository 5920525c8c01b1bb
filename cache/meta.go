package cache

import (
	"fmt"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/tensor"
)

// meta is one per-row int metadata vector (left padding, lengths, ends) under a policy:
// absent, host ints (Eager) or an int32 [B] device array (Lazy). Every Lazy update is a
// new lazy node on top of the old one, exactly as mlx-lm's `x -= n` and friends; nothing
// here evaluates except ints(), which mlx-lm's `.item()` / `.tolist()` mirror. Device
// arrays are kept (tensor.Keep): they outlive the step scope that built them.
type meta struct {
	p    Policy
	host []int        // Eager; nil when absent
	dev  tensor.Array // Lazy; invalid when absent
}

// newMeta makes a set field holding v (Lazy: one live buffer, now, as mx.array(v)).
func newMeta(p Policy, g *graph.Graph, v []int) meta {
	if p == Lazy {
		return meta{p: p, dev: keep(tensor.FromInt32(orDefault(g), int32s(v), len(v)))}
	}
	return meta{p: p, host: append(make([]int, 0, len(v)), v...)}
}

func (m meta) set() bool {
	if m.p == Lazy {
		return m.dev.Valid()
	}
	return m.host != nil
}

// len is the number of rows, 0 when absent.
func (m meta) len() int {
	if m.p == Lazy {
		if m.dev.Valid() {
			return m.dev.Dim(0)
		}
		return 0
	}
	return len(m.host)
}

// sub subtracts n from every row: Lazy, a Subtract node with a fresh scalar.
func (m *meta) sub(n int) {
	if !m.set() {
		return
	}
	if m.p == Lazy {
		tensor.Assign(&m.dev, tensor.SubScalar(m.dev, float64(n)))
		return
	}
	m.host = shifted(m.host, -n)
}

// addScalar adds n to every row: Lazy, an Add node with a fresh scalar.
func (m *meta) addScalar(n int) {
	if !m.set() {
		return
	}
	if m.p == Lazy {
		tensor.Assign(&m.dev, tensor.AddScalar(m.dev, float64(n)))
		return
	}
	m.host = shifted(m.host, n)
}

// add adds a per-row vector; Lazy: v must be a device array of the same length.
func (m *meta) add(v []int, dv tensor.Array) {
	if !m.set() {
		return
	}
	if m.p == Lazy {
		tensor.Assign(&m.dev, tensor.Add(m.dev, dv))
		return
	}
	out := make([]int, len(m.host))
	for i, x := range m.host {
		out[i] = x + v[i]
	}
	m.host = out
}

// shifted returns a new slice of v's values plus n (host slices are never shared
// mutably, so copies of a meta stay independent).
func shifted(v []int, n int) []int {
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = x + n
	}
	return out
}

// take keeps rows (Lazy: a lazy gather with the shared row index).
func (m meta) take(idx *rowIndex) meta {
	if !m.set() {
		return m
	}
	if m.p == Lazy {
		return meta{p: m.p, dev: keep(idx.take(m.dev))}
	}
	out := make([]int, len(idx.rows))
	for i, r := range idx.rows {
		out[i] = m.host[r]
	}
	return meta{p: m.p, host: out}
}

// catMeta appends b's rows to a's (mlx-lm ArraysCache.extend's cat): absent when both
// are, and an absent side counts as na (or nb) zero rows otherwise.
func catMeta(g *graph.Graph, a, b meta, na, nb int) meta {
	if !a.set() && !b.set() {
		return a
	}
	if a.p == Lazy {
		if !a.set() {
			a.dev = tensor.Zeros(orDefault(g), tensor.Int32, na)
		}
		if !b.set() {
			b.dev = tensor.Zeros(orDefault(g), tensor.Int32, nb)
		}
		return meta{p: a.p, dev: keep(tensor.Concatenate(0, a.dev, b.dev))}
	}
	ha, hb := a.host, b.host
	if ha == nil {
		ha = make([]int, na)
	}
	if hb == nil {
		hb = make([]int, nb)
	}
	return meta{p: a.p, host: append(append(make([]int, 0, len(ha)+len(hb)), ha...), hb...)}
}

// ints returns the values (Lazy: evaluates the chain, as mlx-lm's .tolist() does). The
// error is the allocator's, when evaluating the chain fails.
func (m meta) ints() ([]int, error) {
	if !m.set() {
		return nil, nil
	}
	if m.p == Eager {
		return append([]int(nil), m.host...), nil
	}
	v, err := m.dev.Int32s()
	if err != nil {
		return nil, fmt.Errorf("cache: reading metadata: %w", err)
	}
	out := make([]int, len(v))
	for i, x := range v {
		out[i] = int(x)
	}
	return out, nil
}

// array returns the values as an int32 [B] device array (Eager: a fresh one).
func (m meta) array(g *graph.Graph) tensor.Array {
	if m.p == Lazy {
		return m.dev
	}
	return tensor.FromInt32(orDefault(g), int32s(m.host), len(m.host))
}

// arrays lists the device arrays held (Lazy only).
func (m meta) arrays() []tensor.Array {
	if m.p == Lazy && m.dev.Valid() {
		return []tensor.Array{m.dev}
	}
	return nil
}
