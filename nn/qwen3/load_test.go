package qwen3

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/internal/golden"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/checkpoint"
)

// rewrite copies the checkpoint in src to a new directory through edit, which may
// change the config (as a map) and the tensors.
func rewrite(t *testing.T, src string, edit func(cfg map[string]any, ts []checkpoint.WriteTensor) []checkpoint.WriteTensor) string {
	t.Helper()
	ck, err := checkpoint.OpenCheckpoint(src)
	require.NoError(t, err)
	defer ck.Close()
	var cfg map[string]any
	require.NoError(t, json.Unmarshal(ck.Config, &cfg))
	var ts []checkpoint.WriteTensor
	for _, n := range ck.Names() {
		b, info, err := ck.Bytes(n)
		require.NoError(t, err)
		ts = append(ts, checkpoint.WriteTensor{Name: n, DType: info.DType, Shape: info.Shape, Data: append([]byte(nil), b...)})
	}
	ts = edit(cfg, ts)
	raw, err := json.Marshal(cfg)
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "ck")
	require.NoError(t, checkpoint.WriteCheckpoint(dir, raw, ts, checkpoint.WriteOptions{}))
	return dir
}

// TestLoadRefuses: a missing, misshapen or integer tensor is refused by Inspect and by
// Load with the same typed error, naming the file and the tensor.
func TestLoadRefuses(t *testing.T) {
	gm := goldenModels(t)[0]
	const victim = "model.layers.0.self_attn.k_norm.weight"
	for _, c := range []struct {
		edit func(*checkpoint.WriteTensor) bool // false drops the tensor
		want error
		msg  string
	}{
		{func(*checkpoint.WriteTensor) bool { return false }, checkpoint.ErrTensorNotFound, "tensor " + victim + ": not found"},
		{func(w *checkpoint.WriteTensor) bool {
			w.Shape = []int{w.Shape[0] / 2, 2}
			return true
		}, nn.ErrShape, "tensor " + victim + ": shape ["},
		{func(w *checkpoint.WriteTensor) bool { w.DType = checkpoint.I32; return true }, checkpoint.ErrDTypeMismatch, "unsupported dtype I32"},
	} {
		dir := rewrite(t, gm.Dir, func(_ map[string]any, ts []checkpoint.WriteTensor) []checkpoint.WriteTensor {
			var out []checkpoint.WriteTensor
			for _, w := range ts {
				if w.Name != victim || c.edit(&w) {
					out = append(out, w)
				}
			}
			return out
		})
		_, ierr := inspectDir(dir)
		_, lerr := loadDir(dir, graph.NewCPU(graph.Options{}), nn.Options{})
		for _, err := range []error{ierr, lerr} {
			require.ErrorIs(t, err, c.want)
			var we *nn.WeightError
			require.True(t, errors.As(err, &we))
			require.Equal(t, filepath.Join(dir, "model.safetensors"), we.File)
			require.Contains(t, err.Error(), c.msg)
		}
		require.Equal(t, ierr.Error(), lerr.Error())
	}
}

// TestTiedEmbeddings: a tied model (tie_word_embeddings, no lm_head.weight) reads the
// embedding table as its head: one parameter fewer than the untied copy whose head is
// that table, and the same logits. Both copies are derived from the golden set, tied
// or not (a hidden tied set has no lm_head.weight to rewrite): the test runs on the
// set as it is and on a tied copy of it.
func TestTiedEmbeddings(t *testing.T) {
	gm := goldenModels(t)[0]
	var table checkpoint.WriteTensor
	untied := rewrite(t, gm.Dir, func(_ map[string]any, ts []checkpoint.WriteTensor) []checkpoint.WriteTensor {
		for i := range ts {
			if ts[i].Name == "model.embed_tokens.weight" {
				table = ts[i]
			}
		}
		for i := range ts {
			if ts[i].Name == "lm_head.weight" {
				ts[i].Data = table.Data
			}
		}
		return ts
	})
	tied := rewrite(t, gm.Dir, func(cfg map[string]any, ts []checkpoint.WriteTensor) []checkpoint.WriteTensor {
		cfg["tie_word_embeddings"] = true
		var out []checkpoint.WriteTensor
		for _, w := range ts {
			if w.Name != "lm_head.weight" {
				out = append(out, w)
			}
		}
		return out
	})
	d, err := inspectDir(tied)
	require.NoError(t, err)
	du, err := inspectDir(untied)
	require.NoError(t, err)
	require.Equal(t, len(du.Params)-1, len(d.Params))
	g := graph.NewCPU(graph.Options{})
	a, b := loadModel(t, g, tied), loadModel(t, g, untied)
	ids := []int32{3, 1, 4, 1, 5, 9, 2, 6}
	require.Equal(t, golden.Forward(t, b, [][]int32{ids}, b.MakeCache(cache.Eager)), golden.Forward(t, a, [][]int32{ids}, a.MakeCache(cache.Eager)))
}

// TestRandomCachedMatchesFull: a random model's prefill then cached decode steps give
// the logits of one uncached forward over the whole sequence.
func TestRandomCachedMatchesFull(t *testing.T) {
	cfg, err := ReproConfig(nn.ReproOptions{Layers: 3})
	require.NoError(t, err)
	g := graph.NewCPU(graph.Options{})
	m, err := NewRandom(cfg, g, 7, nn.Options{})
	require.NoError(t, err)
	require.Equal(t, []nn.LayerKind{nn.Attention, nn.Attention, nn.Attention}, m.LayerKinds())
	seq := []int32{5, 17, 99, 3, 64, 8, 127, 0}
	full := golden.Forward(t, m, [][]int32{seq}, nil)
	v := m.VocabSize()
	caches := m.MakeCache(cache.Lazy)
	got := golden.Forward(t, m, [][]int32{seq[:5]}, caches)
	for i := 5; i < len(seq); i++ {
		got = append(got, golden.Forward(t, m, [][]int32{{seq[i]}}, caches)...)
	}
	require.LessOrEqual(t, golden.MaxDiff(t, got, full), 1e-5)
	require.Equal(t, len(seq)*v, len(full))
	// The same seed draws the same model.
	m2, err := NewRandom(cfg, g, 7, nn.Options{})
	require.NoError(t, err)
	require.Equal(t, full, golden.Forward(t, m2, [][]int32{seq}, nil))
}
