package cache

import (
	"fmt"
	"slices"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/tensor"
)

// Merge combines the single-request caches of several requests, layer by layer, into
// one batch (mlx-lm's _merge_caches); caches[request][layer]. Per layer:
//   - *KVCache -> *BatchKVCache: rows left-padded to the longest (left padding from the
//     offsets, the keys and values written right-aligned into zeros);
//   - *ArraysCache -> *ArraysCache: states stacked (rows of empty caches are zeros),
//     fields absent; when every merged cache is empty, left padding = [0]*B instead,
//     which arms the lazy leak.
//
// p is the result's policy; an input cache of another policy is a *MixedPoliciesError.
// The result lives on the graph of the inputs (any of their arrays or bound graphs),
// else graph.Default(). Errors wrap ErrIncompatible.
func Merge(p Policy, caches [][]Cache) ([]Cache, error) {
	if p == nil {
		return nil, fmt.Errorf("cache: merge: %w: no policy", ErrIncompatible)
	}
	if len(caches) == 0 {
		return nil, fmt.Errorf("cache: merge: %w: no requests", ErrIncompatible)
	}
	nl := len(caches[0])
	for r, cs := range caches {
		if len(cs) != nl {
			return nil, fmt.Errorf("cache: merge: %w: request %d has %d layers, request 0 has %d", ErrIncompatible, r, len(cs), nl)
		}
	}
	if err := samePolicy(p, caches); err != nil {
		return nil, fmt.Errorf("cache: merge: %w: %w", ErrIncompatible, err)
	}
	g := mergeGraph(caches)
	out := make([]Cache, nl)
	for l := 0; l < nl; l++ {
		var err error
		switch caches[0][l].(type) {
		case *KVCache:
			var kvs []*KVCache
			if kvs, err = layerOf[*KVCache](caches, l); err == nil {
				out[l], err = mergeKV(p, g, kvs)
			}
		case *ArraysCache:
			var acs []*ArraysCache
			if acs, err = layerOf[*ArraysCache](caches, l); err == nil {
				out[l], err = mergeArrays(p, g, acs)
			}
		default:
			err = fmt.Errorf("cannot merge a %T (only *KVCache and *ArraysCache)", caches[0][l])
		}
		if err != nil {
			return nil, fmt.Errorf("cache: merge: %w: layer %d: %w", ErrIncompatible, l, err)
		}
	}
	return out, nil
}

// layerOf collects layer l of every request as a T.
func layerOf[T Cache](caches [][]Cache, l int) ([]T, error) {
	out := make([]T, len(caches))
	for r, cs := range caches {
		c, ok := cs[l].(T)
		var none T
		if !ok || any(c) == any(none) {
			return nil, fmt.Errorf("request %d has a %T, request 0 a %T", r, cs[l], caches[0][l])
		}
		out[r] = c
	}
	return out, nil
}

// samePolicy checks that no input cache has a policy other than p.
func samePolicy(p Policy, caches [][]Cache) error {
	for r, cs := range caches {
		for l, c := range cs {
			if c, ok := c.(interface{ Policy() Policy }); ok {
				if got := c.Policy(); got != nil && got != p {
					return &MixedPoliciesError{Layer: l, Request: r, Want: p, Got: got}
				}
			}
		}
	}
	return nil
}

// mergeGraph finds the graph of any input cache.
func mergeGraph(caches [][]Cache) *graph.Graph {
	for _, cs := range caches {
		for _, c := range cs {
			if c, ok := c.(interface{ graphOrNil() *graph.Graph }); ok {
				if g := c.graphOrNil(); g != nil {
					return g
				}
			}
		}
	}
	return nil
}

func mergeKV(p Policy, g *graph.Graph, cs []*KVCache) (*BatchKVCache, error) {
	lengths := make([]int, len(cs))
	var ref *KVCache
	for i, c := range cs {
		lengths[i] = c.offset
		if c.Empty() {
			continue
		}
		if c.Len() != 1 {
			return nil, fmt.Errorf("request %d: a KVCache of %d rows (want 1)", i, c.Len())
		}
		if ref == nil {
			ref = c
			continue
		}
		ks, vs, rk, rv := c.s.keys.Shape(), c.s.values.Shape(), ref.s.keys.Shape(), ref.s.values.Shape()
		if ks[1] != rk[1] || ks[3] != rk[3] || vs[3] != rv[3] || c.s.keys.DType() != ref.s.keys.DType() {
			return nil, fmt.Errorf("request %d: keys %v / values %v do not match %v / %v", i, c.s.keys, c.s.values, ref.s.keys, ref.s.values)
		}
	}
	longest := slices.Max(lengths)
	padding := make([]int, len(cs))
	for i, n := range lengths {
		padding[i] = longest - n
	}
	if longest == 0 {
		return NewBatchKVCacheOn(g, p, padding), nil
	}
	g = ref.s.keys.Graph()
	rk, rv := ref.s.keys, ref.s.values
	b := len(cs)
	keys := tensor.Zeros(g, rk.DType(), b, rk.Dim(1), longest, rk.Dim(3))
	values := tensor.Zeros(g, rv.DType(), b, rv.Dim(1), longest, rv.Dim(3))
	for i, c := range cs {
		if c.Empty() {
			continue
		}
		st := c.stored()
		keys = tensor.SliceUpdate(keys, st.keys, []int{i, 0, padding[i], 0})
		values = tensor.SliceUpdate(values, st.values, []int{i, 0, padding[i], 0})
	}
	out := NewBatchKVCacheOn(g, p, padding)
	out.s = kvStore{keep(keys), keep(values)}
	out.idx = longest
	out.offset.add(longest)
	return out, nil
}

func mergeArrays(p Policy, g *graph.Graph, cs []*ArraysCache) (*ArraysCache, error) {
	out := NewArraysCacheOn(g, p)
	if !slices.ContainsFunc(cs, func(c *ArraysCache) bool { return !c.Empty() }) {
		out.leftPad = p.field(g, make([]int, len(cs)))
		return out, nil
	}
	conv, err := stackRows("Conv", cs, func(c *ArraysCache) tensor.Array { return c.conv })
	if err != nil {
		return nil, err
	}
	ssm, err := stackRows("SSM", cs, func(c *ArraysCache) tensor.Array { return c.ssm })
	if err != nil {
		return nil, err
	}
	tensor.Assign(&out.conv, conv)
	tensor.Assign(&out.ssm, ssm)
	return out, nil
}

// stackRows writes each request's single-row state into row i of zeros (invalid when no
// request has that state).
func stackRows(name string, cs []*ArraysCache, get func(*ArraysCache) tensor.Array) (tensor.Array, error) {
	var ref tensor.Array
	for i, c := range cs {
		a := get(c)
		if !a.Valid() {
			continue
		}
		if a.Dim(0) != 1 {
			return tensor.Array{}, fmt.Errorf("request %d: %s %v has %d rows (want 1)", i, name, a, a.Dim(0))
		}
		if !ref.Valid() {
			ref = a
			continue
		}
		if !slices.Equal(a.Shape(), ref.Shape()) || a.DType() != ref.DType() {
			return tensor.Array{}, fmt.Errorf("request %d: %s %v does not match %v", i, name, a, ref)
		}
	}
	if !ref.Valid() {
		return ref, nil
	}
	shape := ref.Shape()
	shape[0] = len(cs)
	out := tensor.Zeros(ref.Graph(), ref.DType(), shape...)
	start := make([]int, len(shape))
	for i, c := range cs {
		if a := get(c); a.Valid() {
			start[0] = i
			out = tensor.SliceUpdate(out, a, start)
		}
	}
	return out, nil
}
