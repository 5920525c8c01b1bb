package cache_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/tensor"
)

var policies = []cache.Policy{cache.Lazy, cache.Eager}

func newGraph() *graph.Graph { return graph.NewCPU(graph.Options{}) }

// live is the exact number of live (non-cached) buffers after Synchronize.
func live(t *testing.T, g *graph.Graph) int {
	t.Helper()
	require.NoError(t, g.Synchronize())
	return g.Allocator().LiveBufferCount()
}

func f32s(t *testing.T, a tensor.Array) []float32 {
	t.Helper()
	v, err := a.Float32s()
	require.NoError(t, err)
	return v
}

func ints(t *testing.T, a tensor.Array) []int32 {
	t.Helper()
	v, err := a.Int32s()
	require.NoError(t, err)
	return v
}

// mask reads a bool array as a string of T/F, rows of the last axis separated by '|',
// so expected masks read like the picture.
func mask(t *testing.T, a tensor.Array) string {
	t.Helper()
	require.True(t, a.Valid(), "no mask")
	v, err := a.Bools()
	require.NoError(t, err)
	n := a.Dim(-1)
	out := make([]byte, 0, len(v)+len(v)/n)
	for i, b := range v {
		if i > 0 && i%n == 0 {
			out = append(out, '|')
		}
		if b {
			out = append(out, 'T')
		} else {
			out = append(out, 'F')
		}
	}
	return string(out)
}

// kv returns keys and values [b, h, s, d] whose element (r, h, t, d) is
// base + 1000r + 100h + 10t + d (values: the same plus 0.5), so every position is
// recognisable after padding and rolling.
func kv(g *graph.Graph, base float32, b, h, s, d int) (k, v tensor.Array) {
	kk := make([]float32, 0, b*h*s*d)
	vv := make([]float32, 0, b*h*s*d)
	for r := 0; r < b; r++ {
		for hh := 0; hh < h; hh++ {
			for tt := 0; tt < s; tt++ {
				for dd := 0; dd < d; dd++ {
					x := base + float32(1000*r+100*hh+10*tt+dd)
					kk = append(kk, x)
					vv = append(vv, x+0.5)
				}
			}
		}
	}
	return tensor.FromFloat32(g, kk, b, h, s, d), tensor.FromFloat32(g, vv, b, h, s, d)
}

// row returns the [h, t, d] block of row r of a [B, H, T, D] array's values.
func row(t *testing.T, a tensor.Array, r int) []float32 {
	t.Helper()
	n := a.Size() / a.Dim(0)
	return f32s(t, a)[r*n : (r+1)*n]
}

// positions returns time positions [from, to) of row r of a [B, H, T, D] array.
func positions(t *testing.T, a tensor.Array, r, from, to int) []float32 {
	t.Helper()
	return f32s(t, tensor.Slice(a, []int{r, 0, from}, []int{r + 1, a.Dim(1), to}))
}

// timeCat concatenates [1, H, *, D] arrays along time (the expected content of a row).
func timeCat(t *testing.T, as ...tensor.Array) []float32 {
	t.Helper()
	return f32s(t, tensor.Concatenate(2, as...))
}

func zeros(n int) []float32 { return make([]float32, n) }

// fresh makes n empty single-request caches of the given kinds ('a' ArraysCache, 'k'
// KVCache) on g.
func fresh(g *graph.Graph, p cache.Policy, kinds string) []cache.Cache {
	out := make([]cache.Cache, len(kinds))
	for i, k := range kinds {
		if k == 'a' {
			out[i] = cache.NewArraysCacheOn(g, p)
		} else {
			out[i] = cache.NewKVCacheOn(g)
		}
	}
	return out
}
