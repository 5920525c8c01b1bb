package cache_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/tensor"
)

// record collects what a scenario observed, so Lazy and Eager can be compared whole.
type record struct {
	masks   []string
	offsets [][]int32
	values  [][]float32
}

func (r *record) mask(t *testing.T, a tensor.Array) string {
	m := mask(t, a)
	r.masks = append(r.masks, m)
	return m
}

func (r *record) offs(t *testing.T, c *cache.BatchKVCache) []int32 {
	o := ints(t, c.Offsets(c.Len()))
	r.offsets = append(r.offsets, o)
	return o
}

func (r *record) vals(t *testing.T, v []float32) []float32 {
	r.values = append(r.values, v)
	return v
}

// requestKV makes single-request KVCaches holding n positions each (request i's values
// start at 10000*i), and returns their keys.
func requestKV(t *testing.T, g *graph.Graph, lengths ...int) ([]*cache.KVCache, []tensor.Array) {
	cs := make([]*cache.KVCache, len(lengths))
	keys := make([]tensor.Array, len(lengths))
	for i, n := range lengths {
		cs[i] = cache.NewKVCacheOn(g)
		if n == 0 {
			continue
		}
		k, v := kv(g, float32(10000*i), 1, 2, n, 2)
		cs[i].UpdateAndFetch(k, v)
		keys[i] = k
	}
	return cs, keys
}

func mergeKV(t *testing.T, p cache.Policy, cs []*cache.KVCache) *cache.BatchKVCache {
	in := make([][]cache.Cache, len(cs))
	for i, c := range cs {
		in[i] = []cache.Cache{c}
	}
	out, err := cache.Merge(p, in)
	require.NoError(t, err)
	require.Len(t, out, 1)
	return out[0].(*cache.BatchKVCache)
}

// bothPolicies runs a scenario under each policy and requires identical observations.
func bothPolicies(t *testing.T, scenario func(t *testing.T, g *graph.Graph, p cache.Policy, r *record)) {
	var recs []record
	for _, p := range policies {
		t.Run(p.String(), func(t *testing.T) {
			var r record
			scenario(t, newGraph(), p, &r)
			recs = append(recs, r)
		})
	}
	require.Len(t, recs, 2)
	require.NotEmpty(t, recs[0].masks)
	assert.Equal(t, recs[0], recs[1], "lazy and eager observations differ")
}

// TestBatchKVLeftPadding: merge pads the shorter rows on the left; masks, offsets and
// keys follow, then filter, extract and extend keep every row's content.
func TestBatchKVLeftPadding(t *testing.T) {
	bothPolicies(t, func(t *testing.T, g *graph.Graph, p cache.Policy, r *record) {
		cs, keys := requestKV(t, g, 3, 1, 2)
		c := mergeKV(t, p, cs)
		require.Equal(t, p, c.Policy())
		require.Equal(t, 3, c.Len())
		require.Equal(t, []int32{3, 1, 2}, r.offs(t, c))
		require.Equal(t, "TTTT|FFTT|FTTT", r.mask(t, c.MakeMask(1)))

		k, v := kv(g, 0.5, 3, 2, 1, 2)
		kk, vv := c.UpdateAndFetch(k, v)
		require.Equal(t, []int{3, 2, 4, 2}, kk.Shape())
		require.Equal(t, []int{3, 2, 4, 2}, vv.Shape())
		require.Equal(t, zeros(2*2*2), r.vals(t, positions(t, kk, 1, 0, 2)), "row 1's left padding is zeros")
		require.Equal(t, timeCat(t, keys[1], tensor.SliceAxis(k, 0, 1, 2)), r.vals(t, positions(t, kk, 1, 2, 4)))
		require.Equal(t, timeCat(t, keys[0], tensor.SliceAxis(k, 0, 0, 1)), r.vals(t, row(t, kk, 0)))
		require.Equal(t, []int32{4, 2, 3}, r.offs(t, c))
		require.Equal(t, "TTTTTF|TTTTTT|FFTTTF|FFTTTT|FTTTTF|FTTTTT", r.mask(t, c.MakeMask(2)))

		e := c.Extract(1).(*cache.KVCache)
		require.Equal(t, 2, e.Offset())
		require.Equal(t, timeCat(t, keys[1], tensor.SliceAxis(k, 0, 1, 2)), r.vals(t, f32s(t, e.State()[0])))
		e2 := c.Extract(2).(*cache.KVCache)
		require.Equal(t, timeCat(t, keys[2], tensor.SliceAxis(k, 0, 2, 3)), r.vals(t, f32s(t, e2.State()[0])))

		// Keep rows 2 and 1: their common left padding (1) is dropped.
		c.Filter([]int{2, 1})
		require.Equal(t, 2, c.Len())
		require.Equal(t, []int32{3, 2}, r.offs(t, c))
		require.Equal(t, "TTTT|FTTT", r.mask(t, c.MakeMask(1)))
		k2, v2 := kv(g, 0.75, 2, 2, 1, 2)
		kk, _ = c.UpdateAndFetch(k2, v2)
		require.Equal(t, []int{2, 2, 4, 2}, kk.Shape())
		require.Equal(t, timeCat(t, keys[2], tensor.SliceAxis(k, 0, 2, 3), tensor.SliceAxis(k2, 0, 0, 1)), r.vals(t, row(t, kk, 0)))
		require.Equal(t, timeCat(t, keys[1], tensor.SliceAxis(k, 0, 1, 2), tensor.SliceAxis(k2, 0, 1, 2)), r.vals(t, positions(t, kk, 1, 1, 4)))
		require.Equal(t, []int32{4, 3}, r.offs(t, c))
	})
}

// TestBatchKVExtend: rows of two batches of different lengths are right-aligned at the
// longer one; extracting every row gives back each request's content.
func TestBatchKVExtend(t *testing.T) {
	bothPolicies(t, func(t *testing.T, g *graph.Graph, p cache.Policy, r *record) {
		ca, ka := requestKV(t, g, 2, 1)
		cb, kb := requestKV(t, g, 4)
		a, b := mergeKV(t, p, ca), mergeKV(t, p, cb)
		require.Equal(t, "TTT|FTT", r.mask(t, a.MakeMask(1)))
		a.Extend(b)
		require.Equal(t, 3, a.Len())
		require.Equal(t, []int32{2, 1, 4}, r.offs(t, a))
		require.Equal(t, "FFTTT|FFFTT|TTTTT", r.mask(t, a.MakeMask(1)))
		for i, want := range []tensor.Array{ka[0], ka[1], kb[0]} {
			e := a.Extract(i).(*cache.KVCache)
			require.Equal(t, want.Dim(2), e.Offset(), "row %d", i)
			require.Equal(t, f32s(t, want), r.vals(t, f32s(t, e.State()[0])), "row %d", i)
		}
		k, v := kv(g, 0.5, 3, 2, 1, 2)
		kk, _ := a.UpdateAndFetch(k, v)
		require.Equal(t, []int{3, 2, 5, 2}, kk.Shape())
		require.Equal(t, timeCat(t, ka[1], tensor.SliceAxis(k, 0, 1, 2)), r.vals(t, positions(t, kk, 1, 3, 5)))
		require.Equal(t, []int32{3, 2, 5}, r.offs(t, a))

		// Two empty batches just join their paddings.
		e1 := cache.NewBatchKVCacheOn(g, p, []int{0, 2})
		e1.Extend(cache.NewBatchKVCacheOn(g, p, []int{1}))
		require.True(t, e1.Empty())
		require.Equal(t, 3, e1.Len())
		require.Equal(t, []int32{-0, -2, -1}, r.offs(t, e1))
		require.Equal(t, "T|F|F", r.mask(t, e1.MakeMask(1)))
	})
}

// TestBatchKVGrowth: offset 255 -> 257 crosses the 256 step; left padding stays masked.
func TestBatchKVGrowth(t *testing.T) {
	bothPolicies(t, func(t *testing.T, g *graph.Graph, p cache.Policy, r *record) {
		c := cache.NewBatchKVCacheOn(g, p, []int{0, 1})
		require.True(t, c.Empty())
		require.Equal(t, []int32{0, -1}, r.offs(t, c))
		k1, v1 := kv(g, 0, 2, 1, 255, 2)
		kk, _ := c.UpdateAndFetch(k1, v1)
		require.Equal(t, []int{2, 1, 255, 2}, kk.Shape())
		require.Equal(t, []int{2, 1, 256, 2}, c.State()[0].Shape())
		require.Equal(t, []int32{255, 254}, r.offs(t, c))

		k2, v2 := kv(g, 0.5, 2, 1, 2, 2)
		kk, vv := c.UpdateAndFetch(k2, v2)
		require.Equal(t, []int{2, 1, 257, 2}, kk.Shape())
		require.Equal(t, []int{2, 1, 511, 2}, c.State()[0].Shape())
		require.Equal(t, timeCat(t, k1, k2), r.vals(t, f32s(t, kk)))
		require.Equal(t, timeCat(t, v1, v2), r.vals(t, f32s(t, vv)))
		require.Equal(t, []int32{257, 256}, r.offs(t, c))
		m := c.MakeMask(1)
		require.Equal(t, []int{2, 1, 1, 258}, m.Shape())
		v, err := m.Bools()
		require.NoError(t, err)
		want := make([]bool, 2*258)
		for j := range want {
			want[j] = j != 258 // row 1's first position is padding
		}
		require.Equal(t, want, v)
		r.mask(t, m)
	})
}

// TestBatchKVRightPadding: a right-padded prefill masks the pad keys of shorter rows,
// and Finalize turns right padding into left padding: afterwards the batch reads as if
// the prompts had been left-padded, and each row extracts to its prompt alone.
func TestBatchKVRightPadding(t *testing.T) {
	bothPolicies(t, func(t *testing.T, g *graph.Graph, p cache.Policy, r *record) {
		c := mergeKV(t, p, []*cache.KVCache{cache.NewKVCacheOn(g), cache.NewKVCacheOn(g)})
		require.True(t, c.Empty())
		require.Equal(t, "T|T", r.mask(t, c.MakeMask(1)))
		c.Prepare([]int{3, 1})
		require.Equal(t, "TFF|TTF|TTT|TFF|TFF|TFF", r.mask(t, c.MakeMask(3)))
		k, v := kv(g, 0, 2, 2, 3, 2)
		c.UpdateAndFetch(k, v)
		require.Equal(t, []int32{3, 3}, r.offs(t, c), "before Finalize the pads count")
		c.Finalize()
		require.Equal(t, []int32{3, 1}, r.offs(t, c))
		require.Equal(t, "TTTT|FFTT", r.mask(t, c.MakeMask(1)))
		c.Finalize() // a second Finalize has nothing to do
		require.Equal(t, []int32{3, 1}, r.offs(t, c))

		k1, v1 := kv(g, 0.5, 2, 2, 1, 2)
		kk, vv := c.UpdateAndFetch(k1, v1)
		require.Equal(t, timeCat(t, tensor.SliceAxis(k, 0, 0, 1), tensor.SliceAxis(k1, 0, 0, 1)), r.vals(t, row(t, kk, 0)))
		row1 := tensor.Slice(k, []int{1, 0, 0}, []int{2, 2, 1})
		require.Equal(t, timeCat(t, row1, tensor.SliceAxis(k1, 0, 1, 2)), r.vals(t, positions(t, kk, 1, 2, 4)))
		row1v := tensor.Slice(v, []int{1, 0, 0}, []int{2, 2, 1})
		require.Equal(t, timeCat(t, row1v, tensor.SliceAxis(v1, 0, 1, 2)), r.vals(t, positions(t, vv, 1, 2, 4)))
		require.Equal(t, "TTTTT|FFTTT", r.mask(t, c.MakeMask(1)))

		e := c.Extract(1).(*cache.KVCache)
		require.Equal(t, 2, e.Offset())
		require.Equal(t, timeCat(t, row1, tensor.SliceAxis(k1, 0, 1, 2)), r.vals(t, f32s(t, e.State()[0])))
	})
}

// TestBatchKVState: Lazy's State includes its metadata arrays; Eager's holds only
// keys and values.
func TestBatchKVState(t *testing.T) {
	g := newGraph()
	for p, want := range map[cache.Policy][]int{cache.Lazy: {4, 2}, cache.Eager: {2, 0}} {
		c := cache.NewBatchKVCacheOn(g, p, []int{0, 1})
		k, v := kv(g, 0, 2, 1, 1, 2)
		c.UpdateAndFetch(k, v)
		require.Len(t, c.State(), want[0], p.String())
		c2 := cache.NewBatchKVCacheOn(g, p, []int{0})
		require.Len(t, c2.State(), want[1], p.String())
	}
}

// TestBatchKVMergeWithEmpty: an empty request merged with a longer one is all padding.
func TestBatchKVMergeWithEmpty(t *testing.T) {
	bothPolicies(t, func(t *testing.T, g *graph.Graph, p cache.Policy, r *record) {
		cs, keys := requestKV(t, g, 2, 0)
		c := mergeKV(t, p, cs)
		require.Equal(t, []int32{2, 0}, r.offs(t, c))
		require.Equal(t, "TTT|FFT", r.mask(t, c.MakeMask(1)))
		k, v := kv(g, 0.5, 2, 2, 1, 2)
		kk, _ := c.UpdateAndFetch(k, v)
		require.Equal(t, timeCat(t, keys[0], tensor.SliceAxis(k, 0, 0, 1)), r.vals(t, row(t, kk, 0)))
		pad := tensor.Zeros(g, tensor.Float32, 1, 2, 2, 2)
		require.Equal(t, timeCat(t, pad, tensor.SliceAxis(k, 0, 1, 2)), r.vals(t, row(t, kk, 1)))
		e := c.Extract(1).(*cache.KVCache)
		require.Equal(t, 1, e.Offset())
		require.Equal(t, f32s(t, tensor.SliceAxis(k, 0, 1, 2)), r.vals(t, f32s(t, e.State()[0])))
	})
}

// TestGraphBinding: the metadata of a merge of empty caches live on the graph the
// caches were bound to, else on graph.Default().
func TestGraphBinding(t *testing.T) {
	g := newGraph()
	for _, p := range policies {
		out, err := cache.Merge(p, [][]cache.Cache{fresh(g, p, "ka"), fresh(g, p, "ka")})
		require.NoError(t, err)
		for _, c := range out {
			m := c.(interface{ MakeMask(int) tensor.Array }).MakeMask(1)
			require.Same(t, g, m.Graph(), p.String())
		}
		require.Same(t, g, out[0].(*cache.BatchKVCache).Offsets(2).Graph())
	}
	out, err := cache.Merge(cache.Lazy, [][]cache.Cache{{cache.NewKVCache(), cache.NewArraysCache(cache.Lazy)}})
	require.NoError(t, err)
	require.Same(t, graph.Default(), out[0].(*cache.BatchKVCache).MakeMask(1).Graph())
	require.Same(t, graph.Default(), out[1].(*cache.ArraysCache).MakeMask(1).Graph())
}
