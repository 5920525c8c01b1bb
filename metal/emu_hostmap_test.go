//go:build !darwin

package metal

import (
	"encoding/binary"
	"math"
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/kernels/msltest"
	"github.com/ingotml/ingot/tensor"
)

// TestEmulatedWeightsInPlace: a weight in a mapped file is bound in place on the
// emulated GPU (one wrapped buffer for the file, no buffer of the provider's, no copy:
// a change to the file's bytes is seen) and a kernel reads it at its offset there.
func TestEmulatedWeightsInPlace(t *testing.T) {
	g, b := newEmulatedGPU(t, GPUOptions{}, msltest.OrderForward)
	page := os.Getpagesize()
	sh, err := msltest.NewShared(2 * page) // a whole number of pages: Bytes starts on one
	require.NoError(t, err)
	t.Cleanup(func() { sh.Free() }) //nolint:errcheck // best effort at the end of a test
	b.mapped = append(b.mapped, sh)
	file := sh.Bytes
	w := file[page+16 : page+32] // a float32 [4] at byte page+16 of its file
	for i, v := range []float32{1, 2, 3, 4} {
		binary.LittleEndian.PutUint32(w[4*i:], math.Float32bits(v))
	}

	gr := graph.New(g, graph.Options{ExplicitRelease: true})
	live := b.prov.liveBuffers()
	released := 0
	x := tensor.FromMapped(gr, tensor.Float32, w, file, func() { released++ }, 4)
	require.Equal(t, live, b.prov.liveBuffers(), "no buffer made for the weight")
	require.Equal(t, 1, b.host.windows())
	binary.LittleEndian.PutUint32(w[12:], math.Float32bits(40)) // seen: it is not a copy

	got, err := tensor.Add(x, x).Float32s()
	require.NoError(t, err)
	require.Equal(t, []float32{2, 4, 6, 80}, got)

	tensor.Release(x)
	require.NoError(t, gr.Synchronize())
	require.Equal(t, 1, released)
	require.Equal(t, 0, b.host.windows(), "the file's buffer goes with its last tensor")
}
