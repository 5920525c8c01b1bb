//go:build !darwin

package metal

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/kernels/msltest"
	"github.com/ingotml/ingot/tensor"
)

// TestEmulatedOverlapErrorAtItsStep: on the emulated GPU (a graph.Submitter whose
// command buffers run on a goroutine of their own), steps submitted back to back with
// AsyncEval overlap; the device error of step 1 (an index out of range, found through
// its error word) is step 1's error, worded as Run words it, steps 2 and 3 (each with
// its own error word and scratch) compute what the CPU computes, and the graph goes on.
func TestEmulatedOverlapErrorAtItsStep(t *testing.T) {
	gpu, b := newEmulatedGPU(t, GPUOptions{}, msltest.OrderForward)
	g := graph.New(gpu, graph.Options{})
	table := tensor.FromFloat32(g, []float32{1, 2, 3, 4, 5, 6, 7, 8}, 4, 2)
	require.NoError(t, tensor.Eval(table))

	bad := tensor.Take(table, tensor.FromInt32(g, []int32{1, 9}, 2), 0)
	require.NoError(t, tensor.AsyncEval(bad))
	err := tensor.Eval(bad)
	require.EqualError(t, err, "metal: kernel take failed: kernels: take: index 9 out of range for an axis of length 4")

	s2 := tensor.AddScalar(tensor.Take(table, tensor.FromInt32(g, []int32{3, 0}, 2), 0), 1)
	require.NoError(t, tensor.AsyncEval(s2))
	s3 := tensor.Sum(tensor.Take(table, tensor.FromInt32(g, []int32{2}, 1), 0), -1, false)
	require.NoError(t, tensor.AsyncEval(s3))
	got3, err := s3.Float32s()
	require.NoError(t, err)
	require.Equal(t, []float32{11}, got3)
	got2, err := s2.Float32s()
	require.NoError(t, err)
	require.Equal(t, []float32{8, 9, 2, 3}, got2)
	require.Positive(t, b.ranDispatches())
	require.Empty(t, gpu.r.inFlight, "every submitted batch finished")
}
