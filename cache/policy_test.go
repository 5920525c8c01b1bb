package cache_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/tensor"
)

func TestPolicyString(t *testing.T) {
	assert.Equal(t, "lazy", cache.Lazy.String())
	assert.Equal(t, "eager", cache.Eager.String())
}

func TestParsePolicy(t *testing.T) {
	for s, want := range map[string]cache.Policy{"lazy": cache.Lazy, "eager": cache.Eager, " EAGER\n": cache.Eager, "Lazy": cache.Lazy} {
		p, err := cache.ParsePolicy(s)
		require.NoError(t, err, s)
		assert.Equal(t, want, p, s)
	}
	for _, s := range []string{"", "bogus", "lazyy"} {
		_, err := cache.ParsePolicy(s)
		require.ErrorIs(t, err, cache.ErrUnknownPolicy)
		assert.Equal(t, `cache: unknown cache policy "`+s+`" (want lazy or eager)`, err.Error())
	}
}

func TestMergeErrors(t *testing.T) {
	g := newGraph()
	k, v := kv(g, 0, 1, 2, 3, 4)
	long := cache.NewKVCache()
	long.UpdateAndFetch(k, v)
	k2, v2 := kv(g, 0, 2, 2, 3, 4)
	two := cache.NewKVCache()
	two.UpdateAndFetch(k2, v2)
	k3, v3 := kv(g, 0, 1, 2, 3, 8)
	wide := cache.NewKVCache()
	wide.UpdateAndFetch(k3, v3)
	cases := []struct {
		caches [][]cache.Cache
		p      cache.Policy
		want   string
	}{
		{nil, cache.Lazy, "cache: merge: incompatible caches: no requests"},
		{[][]cache.Cache{fresh(g, cache.Lazy, "ak"), fresh(g, cache.Lazy, "a")}, cache.Lazy,
			"cache: merge: incompatible caches: request 1 has 1 layers, request 0 has 2"},
		{[][]cache.Cache{fresh(g, cache.Lazy, "ak"), fresh(g, cache.Lazy, "ka")}, cache.Lazy,
			"cache: merge: incompatible caches: layer 0: request 1 has a *cache.KVCache, request 0 a *cache.ArraysCache"},
		{[][]cache.Cache{{nil}}, cache.Eager, "cache: merge: incompatible caches: layer 0: cannot merge a <nil> (only *KVCache and *ArraysCache)"},
		{[][]cache.Cache{{cache.NewBatchKVCacheOn(g, cache.Eager, []int{0})}}, cache.Eager,
			"cache: merge: incompatible caches: layer 0: cannot merge a *cache.BatchKVCache (only *KVCache and *ArraysCache)"},
		{[][]cache.Cache{{long}, {two}}, cache.Lazy, "cache: merge: incompatible caches: layer 0: request 1: a KVCache of 2 rows (want 1)"},
		{[][]cache.Cache{{long}, {wide}}, cache.Lazy,
			"cache: merge: incompatible caches: layer 0: request 1: keys Array([1 2 256 8], float32) / values Array([1 2 256 8], float32) do not match Array([1 2 256 4], float32) / Array([1 2 256 4], float32)"},
		{[][]cache.Cache{{long}}, nil, "cache: merge: incompatible caches: no policy"},
		{[][]cache.Cache{fresh(g, cache.Eager, "ka"), fresh(g, cache.Lazy, "ka")}, cache.Eager,
			"cache: merge: incompatible caches: layer 1: request 1 has a lazy cache, the merge is eager"},
	}
	for _, c := range cases {
		out, err := cache.Merge(c.p, c.caches)
		require.Error(t, err, c.want)
		assert.Nil(t, out)
		assert.ErrorIs(t, err, cache.ErrIncompatible)
		assert.Equal(t, c.want, err.Error())
	}

	a1, a2 := cache.NewArraysCacheOn(g, cache.Lazy), cache.NewArraysCacheOn(g, cache.Lazy)
	conv1, _ := kv(g, 0, 1, 1, 3, 4)
	conv2, _ := kv(g, 0, 1, 1, 3, 5)
	a1.Update(conv1, tensor.Array{}, 1)
	a2.Update(conv2, tensor.Array{}, 1)
	_, err := cache.Merge(cache.Lazy, [][]cache.Cache{{a1}, {a2}})
	require.ErrorIs(t, err, cache.ErrIncompatible)
	assert.Equal(t, "cache: merge: incompatible caches: layer 0: request 1: Conv Array([1 1 3 5], float32) does not match Array([1 1 3 4], float32)", err.Error())
}

// TestMergeMixedPolicies: a batch cannot mix bookkeeping; the error is typed and says
// where.
func TestMergeMixedPolicies(t *testing.T) {
	g := newGraph()
	for _, p := range policies {
		q := policies[1-slices.Index(policies, p)]
		_, err := cache.Merge(p, [][]cache.Cache{fresh(g, p, "aka"), fresh(g, p, "aka"), fresh(g, q, "aka")})
		require.ErrorIs(t, err, cache.ErrIncompatible)
		var mixed *cache.MixedPoliciesError
		require.True(t, errors.As(err, &mixed), err.Error())
		assert.Equal(t, cache.MixedPoliciesError{Layer: 0, Request: 2, Want: p, Got: q}, *mixed)
		_, err = cache.Merge(q, [][]cache.Cache{fresh(g, p, "k")})
		require.NoError(t, err, "a KVCache has no policy: it merges into either")
	}
}

func TestMisusePanics(t *testing.T) {
	g := newGraph()
	for _, p := range policies {
		ac := cache.NewArraysCacheOn(g, p)
		bk := cache.NewBatchKVCacheOn(g, p, []int{0, 1, 2})
		kc := cache.NewKVCache()
		assert.PanicsWithError(t, "cache: ArraysCache.Extend: cannot extend with a *cache.KVCache", func() { ac.Extend(kc) })
		assert.PanicsWithError(t, "cache: BatchKVCache.Extend: cannot extend with a *cache.ArraysCache", func() { bk.Extend(ac) })
		assert.PanicsWithError(t, "cache: KVCache.Extend: cannot extend with a *cache.BatchKVCache", func() { kc.Extend(bk) })
		assert.PanicsWithError(t, "cache: BatchKVCache.Filter: row 3 out of range for a batch of 3", func() { bk.Filter([]int{0, 3}) })
		assert.PanicsWithError(t, "cache: BatchKVCache.Filter: no rows to keep (drop the cache instead)", func() { bk.Filter(nil) })
		assert.PanicsWithError(t, "cache: ArraysCache.Filter: row -1 out of range for a batch of 1", func() { ac.Filter([]int{-1}) })
		assert.PanicsWithError(t, "cache: BatchKVCache.Extract: row 5 out of range for a batch of 3", func() { bk.Extract(5) })
		assert.PanicsWithError(t, "cache: ArraysCache.Extract: row 1 out of range for a batch of 1", func() { ac.Extract(1) })
		assert.PanicsWithError(t, "cache: BatchKVCache.Prepare: 2 lengths for 3 rows", func() { bk.Prepare([]int{1, 2}) })
		assert.PanicsWithError(t, "cache: ArraysCache.Prepare: negative length in [-1]", func() { ac.Prepare([]int{-1}) })
		assert.PanicsWithError(t, "cache: ArraysCache.MakeMask: 0 new tokens", func() { ac.MakeMask(0) })
		assert.PanicsWithError(t, "cache: NewBatchKVCache: no rows (one left padding per row)", func() { cache.NewBatchKVCacheOn(g, p, nil) })

		k, v := kv(g, 0, 2, 1, 1, 2)
		assert.PanicsWithError(t, "cache: BatchKVCache.UpdateAndFetch: keys [2 1 1 2] for a batch of 3", func() { bk.UpdateAndFetch(k, v) })
		q := policies[1-slices.Index(policies, p)]
		other := cache.NewBatchKVCacheOn(g, q, []int{0})
		assert.PanicsWithError(t, "cache: BatchKVCache.Extend: policies differ ("+p.String()+" and "+q.String()+")", func() { bk.Extend(other) })
		assert.PanicsWithError(t, "cache: ArraysCache.Extend: policies differ ("+p.String()+" and "+q.String()+")", func() { ac.Extend(cache.NewArraysCacheOn(g, q)) })
		assert.PanicsWithError(t, "cache: BatchKVCache.Offsets: 2 rows for a batch of 3", func() { bk.Offsets(2) })
	}
	assert.PanicsWithError(t, "cache: NewArraysCache: no policy (want cache.Lazy or cache.Eager)", func() { cache.NewArraysCache(nil) })
	assert.PanicsWithError(t, "cache: NewBatchKVCache: no policy (want cache.Lazy or cache.Eager)", func() { cache.NewBatchKVCache(nil, []int{0}) })
	kc := cache.NewKVCache()
	k, v := kv(g, 0, 1, 1, 2, 2)
	kc.UpdateAndFetch(k, v)
	kc2 := cache.NewKVCache()
	k, v = kv(g, 0, 1, 1, 3, 2)
	kc2.UpdateAndFetch(k, v)
	assert.PanicsWithError(t, "cache: KVCache.Extend: offsets differ (2 and 3): batch caches of different lengths with Merge", func() { kc.Extend(kc2) })
	k, v = kv(g, 0, 1, 1, 2, 3)
	assert.PanicsWithError(t, "cache: KVCache.UpdateAndFetch: keys [1 1 2 3] and values [1 1 2 3] do not fit the stored [1 1 256 2] and [1 1 256 2]",
		func() { kc.UpdateAndFetch(k, v) })
}
