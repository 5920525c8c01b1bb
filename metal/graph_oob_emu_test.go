//go:build !darwin

package metal_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/internal/oobcheck"
	"github.com/ingotml/ingot/kernels/msltest"
	"github.com/ingotml/ingot/metal"
)

// TestOutOfRangeIndexFailsGraphOnEmulatedMetal is tensor's TestOutOfRangeIndexIsAnError
// on the emulated Metal device: a token id outside the vocabulary fails the lookup and
// everything computed from it with the *kernels.LaunchError the CPU device reports
// (worded "metal: kernel ..." where the CPU says "graph: cpu kernel ..."), never a
// silent zero row; the graph recovers for in-range work.
func TestOutOfRangeIndexFailsGraphOnEmulatedMetal(t *testing.T) {
	gpu := metal.NewEmulatedGPU(t, metal.GPUOptions{}, msltest.OrderReverse)
	le := oobcheck.Run(t, graph.New(gpu, graph.Options{}), "metal: kernel")
	// The same lookup on the CPU device fails with an equal *LaunchError.
	cle := oobcheck.Run(t, graph.NewCPU(graph.Options{}), "graph: cpu kernel")
	require.Equal(t, cle, le)
}
