//go:build !darwin

package metal_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/kernels"
	"github.com/ingotml/ingot/kernels/msltest"
	"github.com/ingotml/ingot/metal"
	"github.com/ingotml/ingot/tensor"
)

// TestOutOfRangeIndexFailsGraphOnEmulatedMetal is tensor's TestOutOfRangeIndexIsAnError
// on the emulated Metal device: a token id outside the vocabulary fails the lookup and
// everything computed from it with the *kernels.LaunchError the CPU device reports
// (worded "metal: kernel ..." where the CPU says "graph: cpu kernel ..."), never a
// silent zero row; the graph recovers for in-range work.
func TestOutOfRangeIndexFailsGraphOnEmulatedMetal(t *testing.T) {
	gpu := metal.NewEmulatedGPU(t, metal.GPUOptions{}, msltest.OrderReverse)
	g := graph.New(gpu, graph.Options{})
	cpu := graph.NewCPU(graph.Options{})
	table := tensor.FromFloat32(g, make([]float32, 128*4), 128, 4)
	const want = "metal: kernel take failed: kernels: take: index 1051402086 out of range for an axis of length 128"
	emb := tensor.Take(table, tensor.FromInt32(g, []int32{5, 1051402086}, 2), 0)
	next := tensor.AddScalar(emb, 1)
	err := tensor.Eval(next)
	require.EqualError(t, err, want)
	var le *kernels.LaunchError
	require.ErrorAs(t, err, &le)
	require.Equal(t, "take", le.Kernel)

	// The same lookup on the CPU device fails with an equal *LaunchError.
	cemb := tensor.Take(tensor.FromFloat32(cpu, make([]float32, 128*4), 128, 4),
		tensor.FromInt32(cpu, []int32{5, 1051402086}, 2), 0)
	var cle *kernels.LaunchError
	require.ErrorAs(t, tensor.Eval(cemb), &cle)
	require.Equal(t, cle, le)

	_, err = emb.Float32s()
	require.EqualError(t, err, want, "the lookup itself carries the error")
	_, err = tensor.Sum(next, -1, false).Float32s()
	require.EqualError(t, err, want, "so does what is built on it later")

	ok, err := tensor.Take(table, tensor.FromInt32(g, []int32{127, -128}, 2), 0).Float32s()
	require.NoError(t, err, "the graph recovers")
	require.Equal(t, make([]float32, 8), ok)

	alongs := tensor.TakeAlongAxis(table, tensor.FromInt32(g, []int32{0, 0, 0, 128}, 1, 4), 0)
	require.EqualError(t, tensor.Eval(alongs),
		"metal: kernel take_along_axis failed: kernels: take_along_axis: index 128 out of range for an axis of length 128")
	w := tensor.FromFloat32(g, make([]float32, 2*3*4), 2, 3, 4)
	x := tensor.FromFloat32(g, make([]float32, 4), 1, 4)
	mm := tensor.GatherMM(x, w, tensor.FromInt32(g, []int32{-3}, 1, 1))
	require.EqualError(t, tensor.Eval(mm),
		"metal: kernel gather_mm failed: kernels: gather_mm: index -3 out of range for an axis of length 2")
	got, err := tensor.GatherMM(x, w, tensor.FromInt32(g, []int32{-2}, 1, 1)).Float32s()
	require.NoError(t, err)
	require.Equal(t, make([]float32, 3), got)
}
