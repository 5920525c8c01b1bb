//go:build darwin

package metal_test

import (
	"encoding/binary"
	"errors"
	"math"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/kernels"
	"github.com/ingotml/ingot/metal"
)

func f32Bytes(v []float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

// softmaxSums builds sum(softmax(softmax(x))) over rows of a 4x64 input in a
// scope, so that only x and the result are held: the second softmax takes
// the first one's buffer (donation), the sum gets its own.
func softmaxSums(g *graph.Graph) (x, r *graph.Handle) {
	v := make([]float32, 4*64)
	for i := range v {
		v[i] = float32(i%13) * 0.37
	}
	x = g.FromBytes(kernels.Contiguous(kernels.Float32, 4, 64), f32Bytes(v))
	g.BeginScope()
	s := g.Apply(kernels.KSoftmax, nil, kernels.Float32, []int{4, 64}, x)
	s = g.Apply(kernels.KSoftmax, nil, kernels.Float32, []int{4, 64}, s)
	r = g.Keep(g.Apply(kernels.ReduceKernel(kernels.RedSum), nil, kernels.Float32, []int{4}, s))
	g.EndScope()
	return x, r
}

// TestGraphCountsEqualLiveMTLBuffers evaluates a small graph on the GPU and
// checks that the allocator's object count is exactly the number of
// MTLBuffers alive, during and after, and that the results match the CPU's.
func TestGraphCountsEqualLiveMTLBuffers(t *testing.T) {
	gpu, err := metal.NewGPU(metal.GPUOptions{})
	if errors.Is(err, metal.ErrUnavailable) {
		if metal.Required() {
			t.Fatalf("%s is set, and Metal is unavailable: %v", metal.RequireEnv, err)
		}
		t.Skipf("skipping: no Metal device on this Mac: %v", err)
	}
	require.NoError(t, err)
	base := metal.LiveMTLBuffers(gpu)
	g := graph.New(gpu, graph.Options{})
	a := g.Allocator()

	x, r := softmaxSums(g)
	require.NoError(t, g.Eval(r))
	require.NoError(t, g.Synchronize())
	require.Equal(t, 2, a.LiveBufferCount(), "x and the sums")
	require.Equal(t, 3, a.ActiveBufferCount(), "x, the sums and the donated softmax buffer, now cached")
	require.Equal(t, a.ActiveBufferCount(), metal.LiveMTLBuffers(gpu)-base, "allocator objects vs live MTLBuffers")

	got, _, err := g.Bytes(r)
	require.NoError(t, err)
	cpu := graph.NewCPU(graph.Options{})
	_, cr := softmaxSums(cpu)
	want, _, err := cpu.Bytes(cr)
	require.NoError(t, err)
	for i := 0; i < 4; i++ {
		w := math.Float32frombits(binary.LittleEndian.Uint32(want[4*i:]))
		v := math.Float32frombits(binary.LittleEndian.Uint32(got[4*i:]))
		require.InDelta(t, w, v, 1e-5*math.Abs(float64(w)), "row %d", i)
		require.InDelta(t, 1, v, 1e-5, "a softmax row sums to 1")
	}
	runtime.KeepAlive(x)
	runtime.KeepAlive(r)

	x, r = nil, nil
	require.NoError(t, g.Synchronize())
	a.ClearCache()
	require.Equal(t, 0, a.ActiveBufferCount())
	require.Equal(t, base, metal.LiveMTLBuffers(gpu), "every MTLBuffer of the graph released")
}

// TestGoldenModelsOnMetal runs every golden model on the Mac's GPU and on the CPU
// (see compareGolden): every kernel the models use, on their shapes, against its Go
// twin through the logits.
func TestGoldenModelsOnMetal(t *testing.T) {
	compareGolden(t, func(t *testing.T) graph.Device {
		gpu, err := metal.NewGPU(metal.GPUOptions{})
		if errors.Is(err, metal.ErrUnavailable) {
			if metal.Required() {
				t.Fatalf("%s is set, and Metal is unavailable: %v", metal.RequireEnv, err)
			}
			t.Skipf("skipping: no Metal device on this Mac: %v", err)
		}
		require.NoError(t, err)
		return gpu
	})
}
