package qwen35

import (
	"testing"

	"github.com/ingotml/ingot/internal/golden"
	"github.com/ingotml/ingot/nn"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/graph"
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
