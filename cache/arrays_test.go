package cache_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/tensor"
)

// gdnState gives a single-request ArraysCache recognisable state: Conv [1, 3, 4] and
// SSM [1, 2, 2, 2], values starting at base.
func gdnState(g *graph.Graph, p cache.Policy, base float32) *cache.ArraysCache {
	c := cache.NewArraysCacheOn(g, p)
	conv := make([]float32, 12)
	for i := range conv {
		conv[i] = base + float32(i)
	}
	ssm := make([]float32, 8)
	for i := range ssm {
		ssm[i] = base + 0.5 + float32(i)
	}
	c.Update(tensor.FromFloat32(g, conv, 1, 3, 4), tensor.FromFloat32(g, ssm, 1, 2, 2, 2), 1)
	return c
}

func mergeArrays(t *testing.T, p cache.Policy, cs ...*cache.ArraysCache) *cache.ArraysCache {
	in := make([][]cache.Cache, len(cs))
	for i, c := range cs {
		in[i] = []cache.Cache{c}
	}
	out, err := cache.Merge(p, in)
	require.NoError(t, err)
	return out[0].(*cache.ArraysCache)
}

func rows(t *testing.T, a tensor.Array, rs ...int) []float32 {
	t.Helper()
	var out []float32
	for _, r := range rs {
		if r < 0 {
			out = append(out, zeros(a.Size()/a.Dim(0))...)
			continue
		}
		out = append(out, row(t, a, r)...)
	}
	return out
}

// TestArraysStateRoundTrip: merge stacks the states (an empty request gets zero rows and
// no fields are set), extract gives each request back, filter and extend reorder and
// append rows.
func TestArraysStateRoundTrip(t *testing.T) {
	for _, p := range policies {
		t.Run(p.String(), func(t *testing.T) {
			g := newGraph()
			r0, r2 := gdnState(g, p, 0), gdnState(g, p, 100)
			c := mergeArrays(t, p, r0, cache.NewArraysCacheOn(g, p), r2)
			require.Equal(t, p, c.Policy())
			require.False(t, c.Empty())
			require.False(t, c.Armed(), "a merge of caches with state sets no fields")
			require.False(t, c.MakeMask(1).Valid())
			require.Equal(t, 3, c.Len())
			require.Equal(t, []int{3, 3, 4}, c.ConvState().Shape())
			require.Equal(t, []int{3, 2, 2, 2}, c.SSMState().Shape())
			want := [][]float32{f32s(t, r0.ConvState()), zeros(12), f32s(t, r2.ConvState())}
			wantS := [][]float32{f32s(t, r0.SSMState()), zeros(8), f32s(t, r2.SSMState())}
			for i := range want {
				e := c.Extract(i).(*cache.ArraysCache)
				require.Equal(t, p, e.Policy())
				require.Equal(t, 1, e.Len())
				require.False(t, e.Armed())
				require.Equal(t, want[i], f32s(t, e.ConvState()), "row %d", i)
				require.Equal(t, wantS[i], f32s(t, e.SSMState()), "row %d", i)
			}

			c.Filter([]int{2, 0})
			require.Equal(t, 2, c.Len())
			require.Equal(t, append(append([]float32{}, want[2]...), want[0]...), f32s(t, c.ConvState()))
			r3 := gdnState(g, p, 300)
			c.Extend(r3)
			require.Equal(t, 3, c.Len())
			require.Equal(t, append(append(append([]float32{}, want[2]...), want[0]...), f32s(t, r3.ConvState())...), f32s(t, c.ConvState()))
			c.Extend(cache.NewArraysCacheOn(g, p)) // an empty cache counts as one zero row
			require.Equal(t, 4, c.Len())
			require.Equal(t, zeros(8), f32s(t, c.Extract(3).(*cache.ArraysCache).SSMState()))
			require.Equal(t, f32s(t, r3.SSMState()), f32s(t, c.Extract(2).(*cache.ArraysCache).SSMState()))
			require.Len(t, c.State(), 2)

			// An empty cache extended with state gets zero rows for itself.
			n := cache.NewArraysCacheOn(g, p)
			require.True(t, n.Empty())
			require.Equal(t, 0, n.Len())
			n.Extend(gdnState(g, p, 7))
			require.Equal(t, 2, n.Len())
			assert.Equal(t, append(zeros(12), f32s(t, gdnState(g, p, 7).ConvState())...), f32s(t, n.ConvState()))
		})
	}
}

// TestArraysMetadata: the fields through merge-from-empty, prepare, advance, filter,
// extend and finalize; masks are identical under both policies.
func TestArraysMetadata(t *testing.T) {
	bothPolicies(t, func(t *testing.T, g *graph.Graph, p cache.Policy, r *record) {
		c := mergeArrays(t, p, cache.NewArraysCacheOn(g, p), cache.NewArraysCacheOn(g, p), cache.NewArraysCacheOn(g, p))
		require.True(t, c.Empty())
		require.True(t, c.Armed(), "merging empty caches sets left_padding = [0]*B")
		require.Equal(t, 3, c.Len())
		require.Equal(t, "TT|TT|TT", r.mask(t, c.MakeMask(2)))
		require.False(t, c.Lengths().Valid())

		c.Prepare([]int{2, 0, 1})
		require.Equal(t, "TT|FF|TF", r.mask(t, c.MakeMask(2)))
		require.Equal(t, []int32{2, 0, 1}, ints(t, c.Lengths()))

		c.Advance(1) // left padding -1, lengths [1, -1, 0]
		require.Equal(t, "T|F|F", r.mask(t, c.MakeMask(1)))
		require.Equal(t, "TF|FF|FF", r.mask(t, c.MakeMask(2)))
		c.Filter([]int{2, 0})
		require.Equal(t, 2, c.Len())
		require.Equal(t, "F|T", r.mask(t, c.MakeMask(1)))
		c.Extend(cache.NewArraysCacheOn(g, p)) // absent fields become zeros: lengths 0 masks it
		require.Equal(t, 3, c.Len())
		require.Equal(t, "F|T|F", r.mask(t, c.MakeMask(1)))
		armed := mergeArrays(t, p, cache.NewArraysCacheOn(g, p))
		c.Extend(armed)
		require.Equal(t, "F|T|F|F", r.mask(t, c.MakeMask(1)))

		c.Finalize()
		require.False(t, c.Armed())
		require.False(t, c.MakeMask(1).Valid())
		c.Advance(1) // nothing set: nothing to do
		require.False(t, c.Armed())

		// Left padding alone, after advancing past it.
		d := mergeArrays(t, p, cache.NewArraysCacheOn(g, p))
		d.Advance(3)
		require.Equal(t, "TTTT", r.mask(t, d.MakeMask(4)))
		d.Prepare([]int{2})
		require.Equal(t, "TTFF", r.mask(t, d.MakeMask(4)))
	})
}

// TestArraysStateArrays: Lazy's State lists the fields, Eager's only the state.
func TestArraysStateArrays(t *testing.T) {
	g := newGraph()
	for p, want := range map[cache.Policy]int{cache.Lazy: 4, cache.Eager: 2} {
		c := mergeArrays(t, p, cache.NewArraysCacheOn(g, p))
		s := gdnState(g, p, 0)
		c.Update(s.ConvState(), s.SSMState(), 0)
		c.Prepare([]int{1})
		require.Len(t, c.State(), want, p.String())
	}
}
