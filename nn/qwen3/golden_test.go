package qwen3

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/internal/golden"
	"github.com/ingotml/ingot/tensor"
)

// TestGoldenLogits checks prefill logits, every decode step (fed the golden token, with
// the cache) and greedy tokens against transformers, for every qwen3 set and case.
func TestGoldenLogits(t *testing.T) {
	for _, gm := range goldenModels(t) {
		t.Run(gm.Name, func(t *testing.T) {
			g := graph.NewCPU(graph.Options{})
			m := loadModel(t, g, gm.Dir)
			golden.CheckLogits(t, gm, m, tol)
		})
	}
}

// TestGoldenGreedy generates greedily from each prompt, feeding back the model's own
// argmax (computed on the device), and compares the tokens with transformers'.
func TestGoldenGreedy(t *testing.T) {
	for _, gm := range goldenModels(t) {
		t.Run(gm.Name, func(t *testing.T) {
			g := graph.NewCPU(graph.Options{})
			m := loadModel(t, g, gm.Dir)
			golden.CheckGreedy(t, gm, m)
		})
	}
}

// TestGoldenHiddenStates compares every layer's output over the prompt.
func TestGoldenHiddenStates(t *testing.T) {
	for _, gm := range goldenModels(t) {
		t.Run(gm.Name, func(t *testing.T) {
			g := graph.NewCPU(graph.Options{})
			m := loadModel(t, g, gm.Dir)
			for _, c := range gm.Cases {
				want, shape := c.F32(t, gm.Dir, "hidden_states")
				ids := c.Tokens(t, gm.Dir, "input_ids")
				require.Equal(t, []int{m.Config().NumLayers + 1, len(ids), m.Config().HiddenSize}, shape)
				_, hidden := m.ForwardHidden(tensor.FromInt32(g, ids, 1, len(ids)), m.MakeCache(cache.Eager))
				require.Len(t, hidden, shape[0])
				per := shape[1] * shape[2]
				for l, h := range hidden {
					require.Equal(t, []int{1, shape[1], shape[2]}, h.Shape())
					got, err := h.Float32s()
					require.NoError(t, err)
					require.LessOrEqual(t, golden.MaxDiff(t, got, want[l*per:(l+1)*per]), tol, "%s hidden state %d", c.Name, l)
				}
			}
		})
	}
}

// TestGoldenFullLogits runs the whole sequence but the last token at once, with no
// cache, as transformers' uncached forward.
func TestGoldenFullLogits(t *testing.T) {
	for _, gm := range goldenModels(t) {
		t.Run(gm.Name, func(t *testing.T) {
			g := graph.NewCPU(graph.Options{})
			m := loadModel(t, g, gm.Dir)
			for _, c := range gm.Cases {
				want, shape := c.F32(t, gm.Dir, "full_logits")
				toks := c.Tokens(t, gm.Dir, "tokens")
				require.Equal(t, len(toks)-1, shape[0])
				got := golden.Forward(t, m, [][]int32{toks[:len(toks)-1]}, nil)
				d := golden.MaxDiff(t, got, want)
				t.Logf("%s full [%d x %d]: max |diff| = %.3g", c.Name, shape[0], shape[1], d)
				require.LessOrEqual(t, d, tol)
			}
		})
	}
}

// TestGoldenSavePretrained loads what save_pretrained wrote: the same weights, so the
// same logits bit for bit.
func TestGoldenSavePretrained(t *testing.T) {
	for _, gm := range goldenModels(t) {
		t.Run(gm.Name, func(t *testing.T) {
			g := graph.NewCPU(graph.Options{})
			a := loadModel(t, g, gm.Dir)
			b := loadModel(t, g, filepath.Join(gm.Dir, "hf_save_pretrained"))
			for _, c := range gm.Cases {
				pre, _ := c.F32(t, gm.Dir, "prefill_logits")
				ids := c.Tokens(t, gm.Dir, "input_ids")
				got := golden.Forward(t, b, [][]int32{ids}, b.MakeCache(cache.Eager))
				require.LessOrEqual(t, golden.MaxDiff(t, got, pre), tol, c.Name)
				require.Equal(t, golden.Forward(t, a, [][]int32{ids}, a.MakeCache(cache.Eager)), got, c.Name)
			}
		})
	}
}
