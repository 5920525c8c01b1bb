package qwen3

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/tensor"
)

// TestGoldenLogits checks prefill logits, every decode step (fed the golden token, with
// the cache) and greedy tokens against transformers, for every qwen3 set and case.
func TestGoldenLogits(t *testing.T) {
	for _, gm := range goldenModels(t) {
		t.Run(gm.name, func(t *testing.T) {
			g := graph.NewCPU(graph.Options{})
			m := loadModel(t, g, gm.dir)
			v := m.VocabSize()
			for _, c := range gm.cases {
				t.Run(c.name, func(t *testing.T) {
					ids := c.tokens(t, gm.dir, "input_ids")
					toks := c.tokens(t, gm.dir, "tokens")
					pre, _ := c.f32(t, gm.dir, "prefill_logits")
					dec, dshape := c.f32(t, gm.dir, "decode_logits")
					tl := len(ids)
					require.Equal(t, c.PromptLen, tl)
					require.Equal(t, c.NewTokens, dshape[0])
					require.Equal(t, ids, toks[:tl])

					caches := m.MakeCache(cache.Eager)
					got := run(t, m, [][]int32{ids}, caches)
					d := maxDiff(t, got, pre)
					t.Logf("prefill [%d x %d]: max |diff| = %.3g", tl, v, d)
					require.LessOrEqual(t, d, tol)
					require.Equal(t, toks[tl], argmax(rows(got, v, tl-1, tl)), "first greedy token")

					worst := 0.0
					for i := 0; i < c.NewTokens; i++ {
						got := run(t, m, [][]int32{{toks[tl+i]}}, caches)
						d := maxDiff(t, got, rows(dec, v, i, i+1))
						worst = max(worst, d)
						require.LessOrEqual(t, d, tol, "decode step %d", i)
						if tl+i+1 < len(toks) {
							require.Equal(t, toks[tl+i+1], argmax(got), "greedy token after step %d", i)
						}
					}
					t.Logf("%d decode steps: max |diff| = %.3g", c.NewTokens, worst)
				})
			}
		})
	}
}

// TestGoldenGreedy generates greedily from each prompt, feeding back the model's own
// argmax (computed on the device), and compares the tokens with transformers'.
func TestGoldenGreedy(t *testing.T) {
	for _, gm := range goldenModels(t) {
		t.Run(gm.name, func(t *testing.T) {
			g := graph.NewCPU(graph.Options{})
			m := loadModel(t, g, gm.dir)
			for _, c := range gm.cases {
				ids := c.tokens(t, gm.dir, "input_ids")
				toks := c.tokens(t, gm.dir, "tokens")
				caches := m.MakeCache(cache.Lazy)
				in := tensor.FromInt32(g, ids, 1, len(ids))
				var gen []int32
				for len(gen) < len(toks)-len(ids) {
					logits := m.Forward(in, caches)
					last := tensor.SliceAxis(logits, 1, logits.Dim(1)-1, logits.Dim(1))
					next := tensor.Argmax(last, -1, false) // [1, 1] int32
					v, err := next.Int32s()
					require.NoError(t, err)
					gen = append(gen, v[0])
					in = next
				}
				require.Equal(t, toks[len(ids):], gen, c.name)
			}
		})
	}
}

// TestGoldenHiddenStates compares every layer's output over the prompt.
func TestGoldenHiddenStates(t *testing.T) {
	for _, gm := range goldenModels(t) {
		t.Run(gm.name, func(t *testing.T) {
			g := graph.NewCPU(graph.Options{})
			m := loadModel(t, g, gm.dir)
			for _, c := range gm.cases {
				want, shape := c.f32(t, gm.dir, "hidden_states")
				ids := c.tokens(t, gm.dir, "input_ids")
				require.Equal(t, []int{m.Config().NumLayers + 1, len(ids), m.Config().HiddenSize}, shape)
				_, hidden := m.ForwardHidden(tensor.FromInt32(g, ids, 1, len(ids)), m.MakeCache(cache.Eager))
				require.Len(t, hidden, shape[0])
				per := shape[1] * shape[2]
				for l, h := range hidden {
					require.Equal(t, []int{1, shape[1], shape[2]}, h.Shape())
					got, err := h.Float32s()
					require.NoError(t, err)
					require.LessOrEqual(t, maxDiff(t, got, want[l*per:(l+1)*per]), tol, "%s hidden state %d", c.name, l)
				}
			}
		})
	}
}

// TestGoldenFullLogits runs the whole sequence but the last token at once, with no
// cache, as transformers' uncached forward.
func TestGoldenFullLogits(t *testing.T) {
	for _, gm := range goldenModels(t) {
		t.Run(gm.name, func(t *testing.T) {
			g := graph.NewCPU(graph.Options{})
			m := loadModel(t, g, gm.dir)
			for _, c := range gm.cases {
				want, shape := c.f32(t, gm.dir, "full_logits")
				toks := c.tokens(t, gm.dir, "tokens")
				require.Equal(t, len(toks)-1, shape[0])
				got := run(t, m, [][]int32{toks[:len(toks)-1]}, nil)
				d := maxDiff(t, got, want)
				t.Logf("%s full [%d x %d]: max |diff| = %.3g", c.name, shape[0], shape[1], d)
				require.LessOrEqual(t, d, tol)
			}
		})
	}
}

// TestGoldenSavePretrained loads what save_pretrained wrote: the same weights, so the
// same logits bit for bit.
func TestGoldenSavePretrained(t *testing.T) {
	for _, gm := range goldenModels(t) {
		t.Run(gm.name, func(t *testing.T) {
			g := graph.NewCPU(graph.Options{})
			a := loadModel(t, g, gm.dir)
			b := loadModel(t, g, filepath.Join(gm.dir, "hf_save_pretrained"))
			for _, c := range gm.cases {
				pre, _ := c.f32(t, gm.dir, "prefill_logits")
				ids := c.tokens(t, gm.dir, "input_ids")
				got := run(t, b, [][]int32{ids}, b.MakeCache(cache.Eager))
				require.LessOrEqual(t, maxDiff(t, got, pre), tol, c.name)
				require.Equal(t, run(t, a, [][]int32{ids}, a.MakeCache(cache.Eager)), got, c.name)
			}
		})
	}
}
