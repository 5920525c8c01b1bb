package qwen35

import (
	"math"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/internal/golden"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/tensor"
)

// merged makes the server path's caches for one request: fresh caches merged into a
// batch of one, which arms the lazy ArraysCaches (left_padding = [0]).
func merged(t *testing.T, m *Model, p cache.Policy) []cache.Cache {
	t.Helper()
	cs, err := cache.Merge(p, [][]cache.Cache{m.MakeCache(p)})
	require.NoError(t, err)
	return cs
}

// TestPoliciesBitIdentical: the lazy and eager caches give the same logits, bit for
// bit, through prefill and every decode step of the merged (batch) path.
func TestPoliciesBitIdentical(t *testing.T) {
	for _, gm := range goldenModels(t) {
		t.Run(gm.Name, func(t *testing.T) {
			g := graph.NewCPU(graph.Options{})
			m := loadModel(t, g, gm.Dir, nn.Options{})
			for _, c := range gm.Cases {
				ids := c.Tokens(t, gm.Dir, "input_ids")
				toks := c.Tokens(t, gm.Dir, "tokens")
				pre, _ := c.F32(t, gm.Dir, "prefill_logits")
				lazy, eager := merged(t, m, cache.Lazy), merged(t, m, cache.Eager)
				require.True(t, lazy[0].(*cache.ArraysCache).Armed(), "merge of empty caches arms the lazy cache")
				a, b := golden.Forward(t, m, [][]int32{ids}, lazy), golden.Forward(t, m, [][]int32{ids}, eager)
				require.Equal(t, math32bits(a), math32bits(b), "%s prefill", c.Name)
				require.LessOrEqual(t, golden.MaxDiff(t, a, pre), tol)
				for i := 0; i < c.NewTokens; i++ {
					tok := [][]int32{{toks[len(ids)+i]}}
					a, b := golden.Forward(t, m, tok, lazy), golden.Forward(t, m, tok, eager)
					require.Equal(t, math32bits(a), math32bits(b), "%s step %d", c.Name, i)
				}
			}
		})
	}
}

func math32bits(v []float32) []uint32 {
	out := make([]uint32, len(v))
	for i, x := range v {
		out[i] = math.Float32bits(x)
	}
	return out
}

// TestBatchedRightPaddedPrefill runs two prompts of different lengths as one
// right-padded batch (Merge, Prepare, Forward, Finalize, then decode) and checks each
// row against that prompt run alone.
func TestBatchedRightPaddedPrefill(t *testing.T) {
	for _, gm := range goldenModels(t) {
		t.Run(gm.Name, func(t *testing.T) {
			require.GreaterOrEqual(t, len(gm.Cases), 2)
			g := graph.NewCPU(graph.Options{})
			m := loadModel(t, g, gm.Dir, nn.Options{})
			v := m.Config().VocabSize
			cs := gm.Cases[:2]
			var prompts, seqs [][]int32
			var lens []int
			for _, c := range cs {
				prompts = append(prompts, c.Tokens(t, gm.Dir, "input_ids"))
				seqs = append(seqs, c.Tokens(t, gm.Dir, "tokens"))
				lens = append(lens, len(prompts[len(prompts)-1]))
			}
			require.NotEqual(t, lens[0], lens[1], "the prompts must differ in length")
			steps := min(cs[0].NewTokens, cs[1].NewTokens)

			// Each prompt alone, plain caches.
			alone := make([][][]float32, 2) // [row][0 = prefill, 1.. = steps]
			for r := range prompts {
				caches := m.MakeCache(cache.Eager)
				alone[r] = append(alone[r], golden.Forward(t, m, [][]int32{prompts[r]}, caches))
				for i := 0; i < steps; i++ {
					alone[r] = append(alone[r], golden.Forward(t, m, [][]int32{{seqs[r][lens[r]+i]}}, caches))
				}
			}

			width := max(lens[0], lens[1])
			padded := make([][]int32, 2)
			for r, p := range prompts {
				padded[r] = append(append([]int32(nil), p...), make([]int32, width-len(p))...)
			}
			ops := loadModel(t, g, gm.Dir, nn.Options{OpsGatedDelta: true})
			for _, tc := range []struct {
				name string
				m    *Model
				p    cache.Policy
			}{{"lazy", m, cache.Lazy}, {"eager", m, cache.Eager}, {"eager, ops gated delta", ops, cache.Eager}} {
				p, m := tc.p, tc.m
				t.Run(tc.name, func(t *testing.T) {
					caches, err := cache.Merge(p, [][]cache.Cache{m.MakeCache(p), m.MakeCache(p)})
					require.NoError(t, err)
					for _, c := range caches {
						c.Prepare(lens)
					}
					got := golden.Forward(t, m, padded, caches)
					for _, c := range caches {
						c.Finalize()
					}
					for r := range prompts {
						row := golden.Rows(got, v, r*width, r*width+lens[r])
						d := golden.MaxDiff(t, row, alone[r][0])
						t.Logf("row %d (%d tokens) prefill: max |diff| vs alone = %.3g", r, lens[r], d)
						require.LessOrEqual(t, d, tol, "row %d prefill", r)
					}
					for i := 0; i < steps; i++ {
						got := golden.Forward(t, m, [][]int32{{seqs[0][lens[0]+i]}, {seqs[1][lens[1]+i]}}, caches)
						for r := range prompts {
							d := golden.MaxDiff(t, golden.Rows(got, v, r, r+1), alone[r][1+i])
							require.LessOrEqual(t, d, tol, "row %d step %d", r, i)
						}
					}
				})
			}
		})
	}
}

// live is the exact number of live buffers.
func live(t testing.TB, g *graph.Graph) int {
	t.Helper()
	require.NoError(t, g.Synchronize())
	return g.Allocator().LiveBufferCount()
}

// TestLeakRate: the model reads metadata exactly as mlx-lm does, so a lazy cache armed
// by Merge leaks (GDN layers - 1) buffers per decode step; eager caches, and lazy ones
// whose state is all evaluated every step, stay flat.
func TestLeakRate(t *testing.T) {
	cfg, err := ReproConfig(nn.ReproOptions{Layers: 6})
	require.NoError(t, err)
	gdn := cfg.NumGDN()
	require.Equal(t, 5, gdn)
	for _, tc := range []struct {
		name    string
		p       cache.Policy
		evalAll bool
		perStep int
	}{
		{"lazy", cache.Lazy, false, gdn - 1},
		{"eager", cache.Eager, false, 0},
		{"lazy, all state evaluated", cache.Lazy, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := graph.NewCPU(graph.Options{})
			m, err := NewRandom(cfg, g, 1, nn.Options{})
			require.NoError(t, err)
			caches := merged(t, m, tc.p)
			step := func(toks []int32) int32 {
				logits := m.Forward(tensor.FromInt32(g, toks, 1, len(toks)), caches)
				next := tensor.Argmax(tensor.SliceAxis(logits, 1, len(toks)-1, len(toks)), -1, false)
				out := []tensor.Array{next}
				if tc.evalAll {
					for _, c := range caches {
						out = append(out, c.State()...)
					}
				}
				require.NoError(t, tensor.Eval(out...))
				v, err := next.Int32s()
				require.NoError(t, err)
				return v[0]
			}
			tok := step([]int32{1, 2, 3, 4, 5, 6, 7, 8})
			tok = step([]int32{tok})
			before := live(t, g)
			const n = 20
			for i := 0; i < n; i++ {
				tok = step([]int32{tok})
			}
			after := live(t, g)
			runtime.KeepAlive(m) // the weights and caches must outlive the count
			runtime.KeepAlive(caches)
			require.Equal(t, tc.perStep*n, after-before)
		})
	}
}
