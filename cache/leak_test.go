package cache_test

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/tensor"
)

// gdnLayers merges the fresh caches of b requests (layers empty ArraysCaches each) into
// layers batch caches, armed with left padding [0]*b.
func gdnLayers(t *testing.T, g *graph.Graph, p cache.Policy, layers, b int) []*cache.ArraysCache {
	in := make([][]cache.Cache, b)
	for r := range in {
		in[r] = make([]cache.Cache, layers)
		for l := range in[r] {
			in[r][l] = cache.NewArraysCacheOn(g, p)
		}
	}
	merged, err := cache.Merge(p, in)
	require.NoError(t, err)
	out := make([]*cache.ArraysCache, layers)
	for l, c := range merged {
		out[l] = c.(*cache.ArraysCache)
		require.True(t, out[l].Armed())
	}
	return out
}

// step is one decode step as the model runs it, inside a step scope: every GDN layer
// stores its new state and advances, only layer 0's mask is read, and only what the
// mask feeds is evaluated. It returns the mask.
func step(t *testing.T, g *graph.Graph, cs []*cache.ArraysCache, evalState bool) string {
	var m string
	tensor.WithScope(g, func() {
		for _, c := range cs {
			if c.Empty() {
				c.Advance(1)
			} else { // a new state, built in the scope
				c.Update(tensor.AddScalar(c.ConvState(), 1), tensor.AddScalar(c.SSMState(), 1), 1)
			}
		}
		mk := cs[0].MakeMask(1)
		outs := []tensor.Array{mk}
		if evalState {
			for _, c := range cs {
				outs = append(outs, c.State()...)
			}
		}
		require.NoError(t, tensor.Eval(outs...))
		m = mask(t, mk)
	})
	return m
}

// TestLeakInMiniature: L GDN caches merged from empty; each step advances all and reads
// layer 0's mask. Lazy grows by exactly L-1 live buffers per step (one 4-byte scalar per
// unread layer), at every batch size; Eager stays flat; Lazy with every cache array
// evaluated each step stays flat too; dropping the caches frees every chain.
func TestLeakInMiniature(t *testing.T) {
	const layers, steps = 7, 25
	for _, b := range []int{1, 3} {
		for _, c := range []struct {
			p         cache.Policy
			evalState bool
			perStep   int
			armed     int // buffers of the armed fields: one left_padding array per layer, or host ints
		}{
			{cache.Lazy, false, layers - 1, layers},
			{cache.Eager, false, 0, 0},
			{cache.Lazy, true, 0, layers},
		} {
			g := newGraph()
			empty := live(t, g)
			cs := gdnLayers(t, g, c.p, layers, b)
			base := live(t, g)
			require.Equal(t, empty+c.armed, base)
			var masks []string
			for s := 1; s <= steps; s++ {
				masks = append(masks, step(t, g, cs, c.evalState))
				require.Equal(t, base+c.perStep*s, live(t, g), "policy %v evalState %v batch %d step %d", c.p, c.evalState, b, s)
			}
			for _, m := range masks {
				require.Equal(t, repeatRows("T", b), m)
			}
			if c.perStep > 0 {
				// Reading another layer's mask consumes that layer's chain only.
				m := cs[3].MakeMask(1)
				require.NoError(t, tensor.Eval(m))
				require.Equal(t, repeatRows("T", b), mask(t, m))
				require.Equal(t, base+c.perStep*steps-steps, live(t, g))
			}
			runtime.KeepAlive(cs)
			require.Equal(t, empty, live(t, g), "dropping the caches frees the chains")
		}
	}
}

func repeatRows(r string, n int) string {
	out := r
	for i := 1; i < n; i++ {
		out += "|" + r
	}
	return out
}

// TestLeakChurn: the continuous-batching variant. A request joins (Extend) and another
// leaves (Filter) every round without any decode step: under Lazy every unread layer
// keeps the joining request's left_padding buffer and the filter's index buffer (+2 per
// round per layer, layer 0 included since nothing reads a mask here); under Eager
// nothing stays alive.
func TestLeakChurn(t *testing.T) {
	const layers, rounds = 4, 10
	for p, perRound := range map[cache.Policy]int{cache.Lazy: 2 * layers, cache.Eager: 0} {
		g := newGraph()
		cs := gdnLayers(t, g, p, layers, 2)
		base := live(t, g)
		for r := 1; r <= rounds; r++ {
			joining := gdnLayers(t, g, p, layers, 1)
			for l, c := range cs {
				c.Extend(joining[l])
				c.Filter([]int{1, 2})
			}
			require.Equal(t, base+perRound*r, live(t, g), "policy %v round %d", p, r)
		}
		for _, c := range cs {
			require.Equal(t, "T|T", mask(t, c.MakeMask(1)))
		}
		runtime.KeepAlive(cs)
	}
}

// TestScopedDecode: a hybrid batch (one attention layer, two GDN layers) run as the
// generator runs it, each step inside a step scope: a right-padded prefill, then decode
// steps. Everything the caches store outlives the scopes, and with the attention mask
// and offsets read every step the live count is flat under both policies (Finalize
// disarmed the GDN caches).
func TestScopedDecode(t *testing.T) {
	bothPolicies(t, func(t *testing.T, g *graph.Graph, p cache.Policy, r *record) {
		merged, err := cache.Merge(p, [][]cache.Cache{fresh(g, p, "kaa"), fresh(g, p, "kaa")})
		require.NoError(t, err)
		attn := merged[0].(*cache.BatchKVCache)
		gdn := []*cache.ArraysCache{merged[1].(*cache.ArraysCache), merged[2].(*cache.ArraysCache)}
		base := 0
		for s := 0; s < 8; s++ {
			n := 1
			if s == 0 {
				n = 3
			}
			tensor.WithScope(g, func() {
				if s == 0 {
					for _, c := range merged {
						c.Prepare([]int{3, 1})
					}
				}
				off := attn.Offsets(2)
				am := attn.MakeMask(n)
				sm := gdn[0].MakeMask(n)
				k, v := kv(g, float32(s), 2, 1, n, 2)
				keys, _ := attn.UpdateAndFetch(tensor.Add(k, tensor.Reshape(off.AsType(tensor.Float32), 2, 1, 1, 1)), v)
				outs := []tensor.Array{keys, am}
				for _, c := range gdn {
					conv, ssm := c.ConvState(), c.SSMState()
					if c.Empty() {
						conv = tensor.Zeros(g, tensor.Float32, 2, 3, 4)
						ssm = tensor.Zeros(g, tensor.Float32, 2, 2, 2, 2)
					}
					inc := tensor.Scalar(g, 1, tensor.Float32)
					if sm.Valid() {
						inc = tensor.Reshape(tensor.Sum(sm.AsType(tensor.Float32), 1, false), 2, 1, 1, 1)
					}
					c.Update(tensor.AddScalar(conv, 1), tensor.Add(ssm, inc), n)
					outs = append(outs, c.ConvState(), c.SSMState())
				}
				require.NoError(t, tensor.Eval(outs...))
				r.mask(t, am)
				if sm.Valid() {
					r.mask(t, sm)
				}
				r.offsets = append(r.offsets, ints(t, off))
				if s == 0 {
					for _, c := range merged {
						c.Finalize()
					}
				}
			})
			// After the scope every stored array is still usable.
			r.vals(t, f32s(t, gdn[1].SSMState()))
			r.vals(t, f32s(t, gdn[0].ConvState()))
			for i, a := range attn.State() {
				v := f32s(t, a.AsType(tensor.Float32))
				if i < 2 { // keys and values; Lazy also lists its metadata arrays
					r.vals(t, v)
				}
			}
			if s == 2 {
				base = live(t, g)
			} else if s > 2 {
				require.Equal(t, base, live(t, g), "step %d", s)
			}
		}
		require.Equal(t, []string{"TFF|TTF|TTT|TFF|TFF|TFF", "TTT|TFF", "TTTT|FFTT"}, r.masks[:3])
		require.Equal(t, "TTTTTTTTTT|FFTTTTTTTT", r.masks[len(r.masks)-1])
		require.Equal(t, [][]int32{{0, 0}, {3, 1}, {4, 2}}, r.offsets[:3])
		ssm := f32s(t, gdn[1].SSMState())
		require.Equal(t, float32(3+7), ssm[0], "row 0: 3 real prefill tokens, 7 decode steps")
		require.Equal(t, float32(1+7), ssm[8], "row 1: 1 real prefill token, 7 decode steps")
		require.False(t, gdn[0].Armed())
	})
}
