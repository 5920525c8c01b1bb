package tensor_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"
	"unsafe"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/kernels"
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

// mappingDevice is a device that binds mapped bytes in place (as Metal's MapHost does)
// when accept says so, running its kernels on the CPU.
type mappingDevice struct {
	graph.Device
	accept bool
	calls  []string
}

func (d *mappingDevice) Name() string { return "fake-gpu" }

func (d *mappingDevice) MapHost(dt kernels.DType, b, mapping []byte) (func(), bool) {
	d.calls = append(d.calls, fmt.Sprintf("MapHost %v, %d bytes at %d of %d",
		dt, len(b), uintptr(unsafe.Pointer(&b[0]))-uintptr(unsafe.Pointer(&mapping[0])), len(mapping)))
	if !d.accept {
		return nil, false
	}
	return func() { d.calls = append(d.calls, "done") }, true
}

// TestFromMapped: on a device that binds mapped bytes in place, FromMapped hands it the
// tensor's bytes and its file's mapping, uses the bytes without a copy, and at the
// buffer's free ends the device's use before the mapping's release; where the device
// refuses, the bytes are copied and released at once. The old loader copied every
// weight on any device but the CPU.
func TestFromMapped(t *testing.T) {
	mapping := make([]byte, 64)
	b := mapping[16:28]
	for i, v := range []float32{1, 2, 3} {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	for _, accept := range []bool{true, false} {
		dev := &mappingDevice{Device: graph.CPU(), accept: accept}
		g := graph.New(dev, graph.Options{ExplicitRelease: true})
		a := tensor.FromMapped(g, tensor.Float32, b, mapping, func() { dev.calls = append(dev.calls, "release") }, 3)
		mapped := "MapHost float32, 12 bytes at 16 of 64"
		binary.LittleEndian.PutUint32(b[4:], math.Float32bits(20))
		got, err := a.Float32s()
		require.NoError(t, err)
		if accept {
			require.Equal(t, []float32{1, 20, 3}, got, "in place")
			require.Equal(t, []string{mapped}, dev.calls, "nothing released while the array lives")
			tensor.Release(a)
			require.NoError(t, g.Synchronize())
			require.Equal(t, []string{mapped, "done", "release"}, dev.calls)
		} else {
			require.Equal(t, []float32{1, 2, 3}, got, "copied")
			require.Equal(t, []string{mapped, "release"}, dev.calls, "released at once")
		}
		binary.LittleEndian.PutUint32(b[4:], math.Float32bits(2))
	}
	// Without a mapping FromMapped is FromHost: the device is not asked.
	dev := &mappingDevice{Device: graph.CPU(), accept: true}
	g := graph.New(dev, graph.Options{ExplicitRelease: true})
	tensor.FromMapped(g, tensor.Float32, b, nil, nil, 3)
	require.Empty(t, dev.calls)
}
