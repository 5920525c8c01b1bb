package models_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/checkpoint"
	"github.com/ingotml/ingot/nn/models"
	"github.com/ingotml/ingot/tensor"
)

// TestLoadCheckpointReadsNothingAgain: a model built from an open checkpoint needs
// nothing more from its directory (config.json and the headers are parsed once, by
// whoever opened it: decode inspects, then loads from the same checkpoint). Here the
// directory is gone before the load, and the logits equal models.Load's.
func TestLoadCheckpointReadsNothingAgain(t *testing.T) {
	for _, src := range goldenSets(t) {
		t.Run(filepath.Base(src), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ck")
			require.NoError(t, os.Mkdir(dir, 0o755))
			for _, f := range []string{"config.json", "model.safetensors"} {
				b, err := os.ReadFile(filepath.Join(src, f))
				require.NoError(t, err)
				require.NoError(t, os.WriteFile(filepath.Join(dir, f), b, 0o644))
			}
			ck, err := checkpoint.OpenCheckpoint(dir)
			require.NoError(t, err)
			defer ck.Close()
			require.NoError(t, os.RemoveAll(dir))

			ids := readI64(t, filepath.Join(src, "short_input_ids.i64"))
			g := graph.NewCPU(graph.Options{})
			m, err := models.LoadCheckpoint(ck, g, nn.Options{})
			require.NoError(t, err)
			got, err := m.Forward(tensor.FromInt32(g, ids, 1, len(ids)), m.MakeCache(cache.Eager)).Float32s()
			require.NoError(t, err)

			g2 := graph.NewCPU(graph.Options{})
			m2, err := models.Load(src, g2, nn.Options{})
			require.NoError(t, err)
			want, err := m2.Forward(tensor.FromInt32(g2, ids, 1, len(ids)), m2.MakeCache(cache.Eager)).Float32s()
			require.NoError(t, err)
			require.Equal(t, want, got)
		})
	}
}
