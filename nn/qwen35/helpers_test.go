package qwen35

import (
	"testing"

	"github.com/ingotml/ingot/internal/golden"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/checkpoint"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/graph"
)

// tol is the agreement required with the transformers reference (logits are ~O(4)).
const tol = 1e-4

// goldenModels lists the golden sets of the model types this package builds.
func goldenModels(t *testing.T) []golden.Set { return golden.SetsOf(t, ModelTypes...) }

func loadModel(t testing.TB, g *graph.Graph, dir string, opt nn.Options) *Model {
	t.Helper()
	m, err := loadDir(dir, g, opt)
	require.NoError(t, err)
	return m
}

// loadDir loads the checkpoint in dir as nn/models' Load does.
func loadDir(dir string, g *graph.Graph, opt nn.Options) (*Model, error) {
	return golden.WithCheckpoint(dir, func(ck *checkpoint.Checkpoint) (*Model, error) { return LoadCheckpoint(ck, g, opt) })
}
