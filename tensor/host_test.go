package tensor_test

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/tensor"
)

// TestFromBytesFromHost checks the door for outside bytes: FromBytes copies (a later
// change to the bytes is not seen) and FromHost on the CPU device uses the bytes in
// place, one buffer object either way, and calls release once, when the buffer goes.
func TestFromBytesFromHost(t *testing.T) {
	g := graph.NewCPU(graph.Options{ExplicitRelease: true})
	b := make([]byte, 12)
	for i, v := range []float32{1, 2, 3} {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	base := g.Allocator().LiveBufferCount()

	copied := tensor.FromBytes(g, tensor.Float32, b, 3)
	released := 0
	inPlace := tensor.FromHost(g, tensor.Float32, b, func() { released++ }, 1, 3)
	require.Equal(t, base+2, g.Allocator().LiveBufferCount())
	require.Equal(t, []int{1, 3}, inPlace.Shape())

	binary.LittleEndian.PutUint32(b[4:], math.Float32bits(20))
	got, err := copied.Float32s()
	require.NoError(t, err)
	require.Equal(t, []float32{1, 2, 3}, got)
	got, err = inPlace.Float32s()
	require.NoError(t, err)
	require.Equal(t, []float32{1, 20, 3}, got)

	require.Zero(t, released)
	tensor.Release(inPlace)
	require.NoError(t, g.Synchronize())
	require.Equal(t, 1, released)
	require.Equal(t, base+1, g.Allocator().LiveBufferCount())
}
