package qwen35

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/internal/golden"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/tensor"
)

// TestGoldenLogits checks prefill logits, every decode step (fed the golden token, with
// the cache) and greedy tokens against transformers, for every golden model and case.
func TestGoldenLogits(t *testing.T) {
	for _, gm := range goldenModels(t) {
		t.Run(gm.Name, func(t *testing.T) {
			g := graph.NewCPU(graph.Options{})
			m := loadModel(t, g, gm.Dir, nn.Options{})
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
			m := loadModel(t, g, gm.Dir, nn.Options{})
			golden.CheckGreedy(t, gm, m)
		})
	}
}

// TestGoldenHiddenStates compares every layer's output over the prompt.
func TestGoldenHiddenStates(t *testing.T) {
	for _, gm := range goldenModels(t) {
		t.Run(gm.Name, func(t *testing.T) {
			g := graph.NewCPU(graph.Options{})
			m := loadModel(t, g, gm.Dir, nn.Options{})
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
					d := golden.MaxDiff(t, got, want[l*per:(l+1)*per])
					require.LessOrEqual(t, d, tol, "%s hidden state %d", c.Name, l)
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
			m := loadModel(t, g, gm.Dir, nn.Options{})
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

// TestGoldenSavePretrained loads save_pretrained's per-expert layout: the same weights,
// so the same logits bit for bit.
func TestGoldenSavePretrained(t *testing.T) {
	for _, gm := range goldenModels(t) {
		t.Run(gm.Name, func(t *testing.T) {
			g := graph.NewCPU(graph.Options{})
			fused := loadModel(t, g, gm.Dir, nn.Options{})
			saved := loadModel(t, g, filepath.Join(gm.Dir, "hf_save_pretrained"), nn.Options{})
			for _, c := range gm.Cases {
				pre, _ := c.F32(t, gm.Dir, "prefill_logits")
				ids := c.Tokens(t, gm.Dir, "input_ids")
				got := golden.Forward(t, saved, [][]int32{ids}, saved.MakeCache(cache.Eager))
				require.LessOrEqual(t, golden.MaxDiff(t, got, pre), tol, c.Name)
				require.Equal(t, golden.Forward(t, fused, [][]int32{ids}, fused.MakeCache(cache.Eager)), got, c.Name)
			}
		})
	}
}

// TestGoldenOpsGatedDelta checks the pure-ops recurrence against the kernel path and
// the reference, prefill and decode.
func TestGoldenOpsGatedDelta(t *testing.T) {
	for _, gm := range goldenModels(t) {
		t.Run(gm.Name, func(t *testing.T) {
			g := graph.NewCPU(graph.Options{})
			kern := loadModel(t, g, gm.Dir, nn.Options{})
			ops := loadModel(t, g, gm.Dir, nn.Options{OpsGatedDelta: true})
			v := kern.Config().VocabSize
			for _, c := range gm.Cases {
				ids := c.Tokens(t, gm.Dir, "input_ids")
				toks := c.Tokens(t, gm.Dir, "tokens")
				pre, _ := c.F32(t, gm.Dir, "prefill_logits")
				dec, _ := c.F32(t, gm.Dir, "decode_logits")
				kc, oc := kern.MakeCache(cache.Eager), ops.MakeCache(cache.Eager)
				a, b := golden.Forward(t, kern, [][]int32{ids}, kc), golden.Forward(t, ops, [][]int32{ids}, oc)
				d := golden.MaxDiff(t, a, b)
				t.Logf("%s prefill: ops vs kernel max |diff| = %.3g", c.Name, d)
				require.LessOrEqual(t, d, tol)
				require.LessOrEqual(t, golden.MaxDiff(t, b, pre), tol)
				for i := 0; i < c.NewTokens; i++ {
					tok := [][]int32{{toks[len(ids)+i]}}
					a, b := golden.Forward(t, kern, tok, kc), golden.Forward(t, ops, tok, oc)
					require.LessOrEqual(t, golden.MaxDiff(t, a, b), tol, "step %d", i)
					require.LessOrEqual(t, golden.MaxDiff(t, b, golden.Rows(dec, v, i, i+1)), tol, "step %d", i)
				}
			}
		})
	}
}
