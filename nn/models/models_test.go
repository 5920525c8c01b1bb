package models_test

import (
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/internal/golden"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/models"
	"github.com/ingotml/ingot/tensor"
)

// goldenSets returns every golden set under the root (see golden.Sets).
func goldenSets(t *testing.T) []string {
	t.Helper()
	dirs, err := golden.Sets()
	require.NoError(t, err)
	return dirs
}

// rawConfig is what the tests read from a set's config.json to derive expectations.
type rawConfig struct {
	VocabSize  int      `json:"vocab_size"`
	LayerTypes []string `json:"layer_types"`
}

// TestLoadPicksModel: every golden set loads through the registry; the model it builds
// has the file's vocabulary and layer kinds, and its prefill logits match the golden
// ones (the family's own golden tests check every step; this checks the dispatch).
func TestLoadPicksModel(t *testing.T) {
	for _, dir := range goldenSets(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
			require.NoError(t, err)
			var rc rawConfig
			require.NoError(t, json.Unmarshal(raw, &rc))
			g := graph.NewCPU(graph.Options{})
			m, err := models.Load(dir, g, nn.Options{})
			require.NoError(t, err)
			require.Equal(t, rc.VocabSize, m.VocabSize())
			kinds := m.LayerKinds()
			require.Len(t, kinds, len(rc.LayerTypes))
			for i, k := range kinds {
				require.Equal(t, rc.LayerTypes[i], k.String(), "layer %d", i)
			}
			ids := readI64(t, filepath.Join(dir, "short_input_ids.i64"))
			want := readF32(t, filepath.Join(dir, "short_prefill_logits.f32"))
			got, err := m.Forward(tensor.FromInt32(g, ids, 1, len(ids)), m.MakeCache(cache.Eager)).Float32s()
			require.NoError(t, err)
			require.Len(t, got, len(want))
			for i := range got {
				require.InDelta(t, want[i], got[i], 1e-4, "logit %d", i)
			}
		})
	}
}

// TestLazyEagerIdentical: on every model type, two ragged requests prefilled as one
// batch and decoded for several steps give bit-identical logits under both policies
// (the policies differ in bookkeeping only).
func TestLazyEagerIdentical(t *testing.T) {
	for _, dir := range goldenSets(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			g := graph.NewCPU(graph.Options{})
			m, err := models.Load(dir, g, nn.Options{})
			require.NoError(t, err)
			run := func(p cache.Policy) [][]float32 {
				caches, err := cache.Merge(p, [][]cache.Cache{m.MakeCache(p), m.MakeCache(p)})
				require.NoError(t, err)
				prompts := [][]int32{{5, 9, 2, 0}, {7, 1, 3, 3}} // row 0 is 3 tokens, right-padded
				for _, c := range caches {
					c.Prepare([]int{3, 4})
				}
				var out [][]float32
				logits := m.Forward(tensor.FromInt32(g, append(prompts[0], prompts[1]...), 2, 4), caches)
				for _, c := range caches {
					c.Finalize()
				}
				v, err := logits.Float32s()
				require.NoError(t, err)
				out = append(out, v)
				for step := 0; step < 5; step++ {
					tok := []int32{int32(11 + step), int32(20 + 3*step)}
					v, err := m.Forward(tensor.FromInt32(g, tok, 2, 1), caches).Float32s()
					require.NoError(t, err)
					out = append(out, v)
				}
				return out
			}
			require.Equal(t, run(cache.Eager), run(cache.Lazy))
		})
	}
}

func TestUnknownModelType(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	_, err := models.Random([]byte(`{"model_type": "llama"}`), g, 0, nn.Options{})
	require.ErrorIs(t, err, models.ErrUnknownModelType)
	require.EqualError(t, err, `unknown model type "llama" (known: `+strings.Join(models.Types(), ", ")+`)`)
	_, err = models.Random([]byte(`{"hidden_size": 8}`), g, 0, nn.Options{})
	require.ErrorIs(t, err, models.ErrUnknownModelType)

	typ, err := models.ModelType([]byte(`{"model_type": "qwen3_5", "text_config": {"model_type": "qwen3_5_text"}}`))
	require.NoError(t, err)
	require.Equal(t, "qwen3_5_text", typ)

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"model_type": "gpt2"}`), 0o644))
	_, err = models.Load(dir, g, nn.Options{})
	require.ErrorIs(t, err, models.ErrUnknownModelType)
}

func readF32(t *testing.T, path string) []float32 {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	v := make([]float32, len(b)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return v
}

func readI64(t *testing.T, path string) []int32 {
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	v := make([]int32, len(b)/8)
	for i := range v {
		v[i] = int32(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return v
}
