package cache_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/tensor"
)

// TestKVCacheGrowth: storage grows in 256-position steps (255 -> 257 slices the used part
// and appends one step: 511), and the fetched keys are every input in order.
func TestKVCacheGrowth(t *testing.T) {
	g := newGraph()
	c := cache.NewKVCache()
	require.True(t, c.Empty())
	require.Equal(t, 0, c.Len())
	k1, v1 := kv(g, 0, 1, 2, 255, 3)
	keys, values := c.UpdateAndFetch(k1, v1)
	require.Equal(t, []int{1, 2, 255, 3}, keys.Shape())
	require.Equal(t, f32s(t, k1), f32s(t, keys))
	require.Equal(t, f32s(t, v1), f32s(t, values))
	require.Equal(t, []int{1, 2, 256, 3}, c.State()[0].Shape())
	require.Equal(t, 255, c.Offset())

	k2, v2 := kv(g, 0.25, 1, 2, 2, 3)
	keys, values = c.UpdateAndFetch(k2, v2)
	require.Equal(t, 257, c.Offset())
	require.Equal(t, []int{1, 2, 257, 3}, keys.Shape())
	require.Equal(t, []int{1, 2, 511, 3}, c.State()[0].Shape())
	require.Equal(t, timeCat(t, k1, k2), f32s(t, keys))
	require.Equal(t, timeCat(t, v1, v2), f32s(t, values))

	// Within the capacity no new storage is made.
	k3, v3 := kv(g, 0.5, 1, 2, 1, 3)
	keys, _ = c.UpdateAndFetch(k3, v3)
	require.Equal(t, []int{1, 2, 511, 3}, c.State()[0].Shape())
	require.Equal(t, timeCat(t, k1, k2, k3), f32s(t, keys))
	require.False(t, c.Empty())
	require.Equal(t, 1, c.Len())
}

// TestKVCacheRows: filter, extend and extract of a plain cache, by values.
func TestKVCacheRows(t *testing.T) {
	g := newGraph()
	k, v := kv(g, 0, 2, 2, 3, 2)
	c := cache.NewKVCache()
	c.UpdateAndFetch(k, v)
	c.Prepare([]int{3, 3})
	c.Finalize()

	e := c.Extract(1).(*cache.KVCache)
	require.Equal(t, 3, e.Offset())
	require.Equal(t, []int{1, 2, 3, 2}, e.State()[0].Shape())
	require.Equal(t, row(t, k, 1), f32s(t, e.State()[0]))
	require.Equal(t, row(t, v, 1), f32s(t, e.State()[1]))

	c.Filter([]int{1, 0})
	require.Equal(t, 2, c.Len())
	k1, v1 := kv(g, 0.5, 2, 2, 1, 2)
	keys, values := c.UpdateAndFetch(k1, v1)
	swapped := tensor.Concatenate(0, tensor.SliceAxis(k, 0, 1, 2), tensor.SliceAxis(k, 0, 0, 1))
	require.Equal(t, timeCat(t, swapped, k1), f32s(t, keys))
	swappedV := tensor.Concatenate(0, tensor.SliceAxis(v, 0, 1, 2), tensor.SliceAxis(v, 0, 0, 1))
	require.Equal(t, timeCat(t, swappedV, v1), f32s(t, values))

	// Extend with a cache of the same length appends its rows; an empty one is a no-op.
	k2, v2 := kv(g, 7000, 1, 2, 4, 2)
	o := cache.NewKVCache()
	o.UpdateAndFetch(k2, v2)
	c.Extend(cache.NewKVCache())
	require.Equal(t, 2, c.Len())
	c.Extend(o)
	require.Equal(t, 3, c.Len())
	require.Equal(t, 4, c.Offset())
	got := c.Extract(2).(*cache.KVCache)
	require.Equal(t, f32s(t, k2), f32s(t, got.State()[0]))
	require.Equal(t, timeCat(t, tensor.SliceAxis(swapped, 0, 0, 1), tensor.SliceAxis(k1, 0, 0, 1)), f32s(t, c.Extract(0).State()[0]))

	// An empty cache adopts what it is extended with.
	n := cache.NewKVCache()
	n.Extend(o)
	assert.Equal(t, 4, n.Offset())
	assert.Equal(t, f32s(t, k2), f32s(t, n.Extract(0).State()[0]))
	assert.Empty(t, cache.NewKVCache().State())
	assert.True(t, cache.NewKVCache().Extract(0).Empty())
}

// TestKVCacheAttention: a KVCache as an Attention cache: every row's RoPE offset is the
// number of positions stored, one new token needs no mask, and n new tokens get the
// causal mask after those positions.
func TestKVCacheAttention(t *testing.T) {
	g := newGraph()
	var c cache.Attention = cache.NewKVCacheOn(g)
	require.Equal(t, []int32{0, 0}, ints(t, c.Offsets(2)))
	require.Same(t, g, c.Offsets(1).Graph())
	require.False(t, c.MakeMask(1).Valid())
	require.Equal(t, "TFF|TTF|TTT", mask(t, c.MakeMask(3)))
	k, v := kv(g, 0, 1, 1, 2, 2)
	c.UpdateAndFetch(k, v)
	require.Equal(t, []int32{2}, ints(t, c.Offsets(1)))
	require.False(t, c.MakeMask(1).Valid())
	require.Equal(t, []int{1, 1, 2, 4}, c.MakeMask(2).Shape())
	require.Equal(t, "TTTF|TTTT", mask(t, c.MakeMask(2)))
	require.Equal(t, mask(t, cache.CausalMask(g, 2, 2)), mask(t, c.MakeMask(2)))
	assert.PanicsWithError(t, "cache: KVCache.MakeMask: 0 new tokens", func() { c.MakeMask(0) })
}
