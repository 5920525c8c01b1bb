package qwen35

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/checkpoint"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/internal/golden"
)

// TestMLXLayoutRoundTrip: every golden model, from HF's runtime layout (fused experts)
// and from save_pretrained's (one tensor per expert), rewritten by MLXLayout and saved
// as mlx-lm saves (format "mlx"), loads as an mlx-lm checkpoint and gives the
// original's logits up to mlx-lm's q/k normalisation epsilon (the rule for a file it
// wrote), the one difference: with another format the logits are equal bit for bit.
func TestMLXLayoutRoundTrip(t *testing.T) {
	for _, gm := range goldenModels(t) {
		for _, layout := range []string{"", "hf_save_pretrained"} {
			src := filepath.Join(gm.Dir, layout)
			if _, err := os.Stat(filepath.Join(src, "config.json")); err != nil {
				continue
			}
			t.Run(gm.Name+"/"+layout, func(t *testing.T) {
				ck, err := checkpoint.OpenCheckpoint(src)
				require.NoError(t, err)
				defer ck.Close()
				ts, err := MLXLayout(ck)
				require.NoError(t, err)
				for _, x := range ts {
					require.NotContains(t, x.Name, ".experts.", "experts are stacked as switch_mlp")
					require.True(t, strings.HasPrefix(x.Name, "model.") || x.Name == "lm_head.weight", x.Name)
				}
				dst := filepath.Join(t.TempDir(), "mlx")
				require.NoError(t, checkpoint.WriteCheckpoint(dst, ck.Config, ts, checkpoint.WriteOptions{}))
				out, err := checkpoint.OpenCheckpoint(dst)
				require.NoError(t, err)
				require.Equal(t, "mlx", out.Format())
				require.NoError(t, out.Close())

				g := graph.NewCPU(graph.Options{})
				ref := loadModel(t, g, src, nn.Options{})
				m := loadModel(t, g, dst, nn.Options{})
				require.True(t, newFileSource(mustOpen(t, dst)).mlx, "read in mlx-lm's layout")
				ids := gm.Cases[0].Tokens(t, gm.Dir, "input_ids")
				want := golden.Forward(t, ref, [][]int32{ids}, ref.MakeCache(cache.Eager))
				got := golden.Forward(t, m, [][]int32{ids}, m.MakeCache(cache.Eager))
				// Written as mlx-lm writes (format "mlx"), the file is read with mlx-lm's rules:
				// here the same config, and mlx-lm's q/k epsilon.
				hf, err := ParseHFConfig(ck.Config)
				require.NoError(t, err)
				mlx, err := ParseModelArgs(ck.Config)
				require.NoError(t, err)
				require.Equal(t, hf, mlx)
				// Written with another format, the same tensors give the original's logits
				// bit for bit: the rewrite itself changes no number.
				pt := filepath.Join(t.TempDir(), "pt")
				require.NoError(t, os.MkdirAll(pt, 0o755))
				require.NoError(t, os.WriteFile(filepath.Join(pt, "config.json"), ck.Config, 0o644))
				require.NoError(t, checkpoint.WriteSafetensors(filepath.Join(pt, "model.safetensors"), map[string]string{"format": "pt"}, ts))
				mp := loadModel(t, g, pt, nn.Options{})
				require.Equal(t, want, golden.Forward(t, mp, [][]int32{ids}, mp.MakeCache(cache.Eager)))
				require.LessOrEqual(t, golden.MaxDiff(t, want, got), 2e-4) // measured worst: 8.0e-5
			})
		}
	}
}

// TestMLXLayoutKeepsMLX: a checkpoint already in mlx-lm's layout comes back unchanged
// (its text-model tensors, byte for byte).
func TestMLXLayoutKeepsMLX(t *testing.T) {
	ck := mustOpen(t, filepath.Join(golden.MLXRoot(), "mlx_q4g32_12l"))
	ts, err := MLXLayout(ck)
	require.NoError(t, err)
	require.Len(t, ts, len(ck.Names()))
	for _, x := range ts {
		raw, _, err := ck.Bytes("language_model." + x.Name)
		require.NoError(t, err, x.Name)
		require.Equal(t, raw, x.Data, x.Name)
	}
}

func mustOpen(t *testing.T, dir string) *checkpoint.Checkpoint {
	t.Helper()
	ck, err := checkpoint.OpenCheckpoint(dir)
	require.NoError(t, err)
	t.Cleanup(func() { ck.Close() })
	return ck
}
