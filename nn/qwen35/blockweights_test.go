package qwen35

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/internal/golden"
	"github.com/ingotml/ingot/nn"
)

// fusedTol bounds |fused - unfused| on logits of magnitude ~4: float32 rounding noise
// (the fused kernels do the same arithmetic, but a GDN step keeps its values in
// registers where the ops store and reload, and sums may associate differently).
const fusedTol = 1e-5

// compareFused feeds prompt, then each of steps one token at a time, to the fused
// model f and the unfused model u, both on fresh caches of policy p (merged into a
// batch of one when merge is set: the server path, with an SSM mask), and returns the
// worst logit difference. It also checks the fused path builds fewer nodes.
func compareFused(t *testing.T, f, u *Model, p cache.Policy, merge bool, prompt []int32, steps []int32) float64 {
	t.Helper()
	mk := func(m *Model) []cache.Cache {
		if merge {
			return merged(t, m, p)
		}
		return m.MakeCache(p)
	}
	cf, cu := mk(f), mk(u)
	worst := golden.MaxDiff(t, golden.Forward(t, f, [][]int32{prompt}, cf), golden.Forward(t, u, [][]int32{prompt}, cu))
	for i, tok := range steps {
		c0 := f.g.Stats().Created
		a := golden.Forward(t, f, [][]int32{{tok}}, cf)
		c1 := f.g.Stats().Created
		b := golden.Forward(t, u, [][]int32{{tok}}, cu)
		c2 := u.g.Stats().Created
		if f.g == u.g {
			require.Less(t, c1-c0, c2-c1, "step %d: the fused path builds fewer nodes", i)
		}
		worst = max(worst, golden.MaxDiff(t, a, b))
	}
	return worst
}

// TestFusedMatchesUnfused: for every golden model, the fused per-layer kernels give the
// unfused path's logits within float32 noise, through prefill and every decode step, on
// the plain path and on the merged (masked) server path, lazy and eager.
func TestFusedMatchesUnfused(t *testing.T) {
	for _, gm := range goldenModels(t) {
		t.Run(gm.Name, func(t *testing.T) {
			g := graph.NewCPU(graph.Options{})
			f := loadModel(t, g, gm.Dir, nn.Options{})
			u := loadModel(t, g, gm.Dir, nn.Options{Unfused: true})
			for _, c := range gm.Cases {
				ids := c.Tokens(t, gm.Dir, "input_ids")
				toks := c.Tokens(t, gm.Dir, "tokens")
				for _, p := range []cache.Policy{cache.Lazy, cache.Eager} {
					for _, merge := range []bool{false, true} {
						d := compareFused(t, f, u, p, merge, ids, toks[len(ids):])
						t.Logf("%s %v merged=%v: max |fused - unfused| = %.3g", c.Name, p, merge, d)
						require.LessOrEqual(t, d, fusedTol, "%s %v merged=%v", c.Name, p, merge)
					}
				}
			}
		})
	}
}

// TestFusedMatchesUnfusedRandom: the same for random models of every repro type
// (Qwen3-Next's fused projections and MoE rule, the dense Qwen3.5, the MoE default),
// with the interval-4 layer pattern, over 12 decode steps.
func TestFusedMatchesUnfusedRandom(t *testing.T) {
	for _, typ := range []string{TypeQwen3Next, TypeQwen35, TypeQwen35MoE} {
		t.Run(typ, func(t *testing.T) {
			cfg, err := ReproConfig(nn.ReproOptions{ModelType: typ, Layers: 8, Interval: 4})
			require.NoError(t, err)
			g := graph.NewCPU(graph.Options{})
			f, err := NewRandom(cfg, g, 7, nn.Options{})
			require.NoError(t, err)
			u, err := NewRandom(cfg, g, 7, nn.Options{Unfused: true})
			require.NoError(t, err)
			prompt := []int32{3, 1, 4, 1, 5, 9, 2, 6}
			steps := []int32{5, 3, 5, 8, 9, 7, 9, 3, 2, 3, 8, 4}
			for _, merge := range []bool{false, true} {
				d := compareFused(t, f, u, cache.Lazy, merge, prompt, steps)
				t.Logf("merged=%v: max |fused - unfused| = %.3g", merge, d)
				require.LessOrEqual(t, d, fusedTol, "merged=%v", merge)
			}
		})
	}
}

// TestFusedGivesWayAtRealSizes: the fused/unfused choice is made once, at build, by
// the graph's device (graph.TakesFused; here the CPU's: the fused kernels' size
// limits; the GPU's is tested in metal/fusedchoice_test.go). The repro's widths
// take the fused blocks; Qwen3.5-0.8B's (conv channels 6144, MLP width 3584, its
// hidden size shrunk) exceed the Metal twins' limits and take the unfused kernels,
// with the same logits as Options.Unfused forces.
func TestFusedGivesWayAtRealSizes(t *testing.T) {
	fusedBlocks := func(m *Model) (gdn, ff int) {
		for _, l := range m.layers {
			if l.gdn != nil && l.gdn.fw != nil {
				gdn++
			}
			if l.moeW != nil || l.mlpW != nil {
				ff++
			}
		}
		return gdn, ff
	}
	repro, err := ReproConfig(nn.ReproOptions{Layers: 4, Interval: 4})
	require.NoError(t, err)
	m, err := NewRandom(repro, graph.NewCPU(graph.Options{}), 1, nn.Options{})
	require.NoError(t, err)
	gdn, ff := fusedBlocks(m)
	require.Equal(t, 3, gdn, "the repro's GDN layers take the fused step")
	require.Equal(t, 4, ff, "the repro's feed-forward blocks are fused")

	real, err := LoadConfig("../../cmd/decode/testdata/qwen3_5_0.8b/config.json")
	require.NoError(t, err)
	real.HiddenSize, real.NumLayers, real.LayerTypes = 64, 4, real.LayerTypes[:4]
	real.VocabSize = 256
	require.NoError(t, real.Validate())
	f, err := NewRandom(real, graph.NewCPU(graph.Options{}), 1, nn.Options{})
	require.NoError(t, err)
	gdn, ff = fusedBlocks(f)
	require.Zero(t, gdn, "conv channels %d exceed gdn_block's limit", 2*real.LinearNumKeyHeads*real.LinearKeyHeadDim+real.LinearNumValueHeads*real.LinearValueHeadDim)
	require.Zero(t, ff, "MLP width %d exceeds mlp_block's limit", real.IntermediateSize)
	u, err := NewRandom(real, graph.NewCPU(graph.Options{}), 1, nn.Options{Unfused: true})
	require.NoError(t, err)
	require.Zero(t, compareFused(t, f, u, cache.Eager, false, []int32{1, 2, 3}, []int32{4, 5}), "the same graph as Unfused")
}
