// Package oobcheck is one test scenario, run on every device that can execute the
// kernels (tensor's tests on the CPU device, metal's on the emulated Metal device): an
// index out of range is an error carried by the array and everything computed from it,
// never a silent zero row, and the graph recovers for in-range work.
package oobcheck

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/kernels"
	"github.com/ingotml/ingot/tensor"
)

// Run runs the scenario on g, whose device words a failed kernel as prefix + " " +
// kernel name + " failed: ..." ("graph: cpu kernel" on the CPU, "metal: kernel" on
// Metal). It returns the token lookup's error, for comparison across devices.
func Run(t testing.TB, g *graph.Graph, prefix string) *kernels.LaunchError {
	t.Helper()
	table := tensor.FromFloat32(g, make([]float32, 128*4), 128, 4)
	want := prefix + " take failed: kernels: take: index 1051402086 out of range for an axis of length 128"
	emb := tensor.Take(table, tensor.FromInt32(g, []int32{5, 1051402086}, 2), 0)
	next := tensor.AddScalar(emb, 1)
	err := tensor.Eval(next)
	require.EqualError(t, err, want)
	var le *kernels.LaunchError
	require.ErrorAs(t, err, &le)
	require.Equal(t, "take", le.Kernel)

	_, err = emb.Float32s()
	require.EqualError(t, err, want, "the lookup itself carries the error")
	_, err = tensor.Sum(next, -1, false).Float32s()
	require.EqualError(t, err, want, "so does what is built on it later")

	ok, err := tensor.Take(table, tensor.FromInt32(g, []int32{127, -128}, 2), 0).Float32s()
	require.NoError(t, err, "the graph recovers")
	require.Equal(t, make([]float32, 8), ok)

	alongs := tensor.TakeAlongAxis(table, tensor.FromInt32(g, []int32{0, 0, 0, 128}, 1, 4), 0)
	require.EqualError(t, tensor.Eval(alongs),
		prefix+" take_along_axis failed: kernels: take_along_axis: index 128 out of range for an axis of length 128")
	w := tensor.FromFloat32(g, make([]float32, 2*3*4), 2, 3, 4)
	x := tensor.FromFloat32(g, make([]float32, 4), 1, 4)
	mm := tensor.GatherMM(x, w, tensor.FromInt32(g, []int32{-3}, 1, 1))
	require.EqualError(t, tensor.Eval(mm),
		prefix+" gather_mm failed: kernels: gather_mm: index -3 out of range for an axis of length 2")
	got, err := tensor.GatherMM(x, w, tensor.FromInt32(g, []int32{-2}, 1, 1)).Float32s()
	require.NoError(t, err)
	require.Equal(t, make([]float32, 3), got)
	return le
}
