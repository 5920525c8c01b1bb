package qwen35

import (
	"testing"

	"github.com/ingotml/ingot/internal/golden"
	"github.com/ingotml/ingot/nn"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/tensor"
)

// tol is the agreement required with the transformers reference (logits are ~O(4)).
const tol = 1e-4

// goldenModels lists the golden sets of the model types this package builds.
func goldenModels(t *testing.T) []golden.Set { return golden.SetsOf(t, ModelTypes...) }

func loadModel(t testing.TB, g *graph.Graph, dir string, opt nn.Options) *Model {
	t.Helper()
	m, err := Load(dir, g, opt)
	require.NoError(t, err)
	return m
}

// run feeds rows of equal length (a [B, S] batch) and returns the logits on the host.
func run(t testing.TB, m *Model, rows [][]int32, caches []cache.Cache) []float32 {
	t.Helper()
	s := len(rows[0])
	flat := make([]int32, 0, len(rows)*s)
	for _, r := range rows {
		require.Len(t, r, s)
		flat = append(flat, r...)
	}
	out, err := m.Forward(tensor.FromInt32(m.g, flat, len(rows), s), caches).Float32s()
	require.NoError(t, err)
	return out
}
