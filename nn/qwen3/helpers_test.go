package qwen3

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/internal/golden"
	"github.com/ingotml/ingot/nn"
)

// tol is the agreement required with the transformers reference: nn/qwen35's.
const tol = 1e-4

// goldenModels lists the golden sets of the model types this package builds.
func goldenModels(t *testing.T) []golden.Set { return golden.SetsOf(t, TypeQwen3) }

func loadModel(t testing.TB, g *graph.Graph, dir string) *Model {
	t.Helper()
	m, err := Load(dir, g, nn.Options{})
	require.NoError(t, err)
	return m
}
