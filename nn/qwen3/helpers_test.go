package qwen3

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/internal/golden"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/checkpoint"
)

// tol is the agreement required with the transformers reference: nn/qwen35's.
const tol = 1e-4

// goldenModels lists the golden sets of the model types this package builds.
func goldenModels(t *testing.T) []golden.Set { return golden.SetsOf(t, TypeQwen3) }

func loadModel(t testing.TB, g *graph.Graph, dir string) *Model {
	t.Helper()
	m, err := loadDir(dir, g, nn.Options{})
	require.NoError(t, err)
	return m
}

// loadDir loads the checkpoint in dir as nn/models' Load does.
func loadDir(dir string, g *graph.Graph, opt nn.Options) (*Model, error) {
	return golden.WithCheckpoint(dir, func(ck *checkpoint.Checkpoint) (*Model, error) { return LoadCheckpoint(ck, g, opt) })
}

// inspectDir inspects the checkpoint in dir as nn/models' Inspect does.
func inspectDir(dir string) (*nn.Description, error) {
	return golden.WithCheckpoint(dir, InspectCheckpoint)
}
