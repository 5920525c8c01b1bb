package graph_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/kernels"
	"github.com/ingotml/ingot/tensor"
)

// slowDevice is the CPU device with every Run delayed.
type slowDevice struct {
	graph.Device
	delay time.Duration
}

func (d *slowDevice) Run(b []kernels.Launch) error {
	time.Sleep(d.delay)
	return d.Device.Run(b)
}

// TestBufferReuseIndependentOfWorkerSpeed: a buffer released while the batch that
// writes it may still run returns to the allocator at the graph's next wait, whether the
// worker happened to be done already or not. Otherwise the next malloc takes it from
// the cache or not depending on timing, and the allocator's counts (cached buffers,
// buffers ever allocated, the sizes of live ones) differ from run to run.
func TestBufferReuseIndependentOfWorkerSpeed(t *testing.T) {
	run := func(delay, pause time.Duration) []int {
		g := graph.New(&slowDevice{Device: graph.CPU(), delay: delay}, graph.Options{ExplicitRelease: true})
		a := g.Allocator()
		x := tensor.FromFloat32(g, []float32{1, 2, 3, 4, 5, 6, 7, 8}, 8)
		var counts []int
		for step := 0; step < 4; step++ {
			tmp := tensor.AddScalar(x, 1)
			y := tensor.MulScalar(tmp, 2)
			require.NoError(t, tensor.AsyncEval(y, tmp))
			time.Sleep(pause)   // the worker is done by now (fast device) or not (slow)
			tensor.Release(tmp) // dropped while its batch may still be in flight
			z := tensor.SubScalar(x, 1)
			require.NoError(t, tensor.AsyncEval(z)) // a buffer of tmp's size
			_, err := z.Float32s()
			require.NoError(t, err)
			_, err = y.Float32s()
			require.NoError(t, err)
			// (The scalar operands are never released here: the active count grows by
			// three a step, alike in both runs.)
			counts = append(counts, a.ActiveBufferCount(), a.CacheBufferCount())
			tensor.Release(y)
			tensor.Release(z)
		}
		return counts
	}
	fast := run(0, 20*time.Millisecond)
	slow := run(30*time.Millisecond, 0)
	require.Equal(t, fast, slow, "active and cached buffer counts after each step, fast worker against slow")
}

// TestClearCacheWaitsAndKeepsLive: ClearCache waits for the batch in flight, so a
// buffer released while that batch may still run is freed and dropped too, whatever
// the worker's speed; live buffers stay, and nothing is cached afterwards.
func TestClearCacheWaitsAndKeepsLive(t *testing.T) {
	for _, delay := range []time.Duration{0, 30 * time.Millisecond} {
		g := graph.New(&slowDevice{Device: graph.CPU(), delay: delay}, graph.Options{ExplicitRelease: true})
		a := g.Allocator()
		x := tensor.FromFloat32(g, []float32{1, 2, 3, 4, 5, 6, 7, 8}, 8)
		tmp := tensor.AddScalar(x, 1)
		y := tensor.MulScalar(tmp, 2)
		require.NoError(t, tensor.AsyncEval(y))
		tensor.Release(tmp) // freed once its batch is done
		live := a.ActiveBufferCount() - 1
		require.NoError(t, g.ClearCache())
		require.Equal(t, live, a.ActiveBufferCount(), "live buffers after ClearCache (delay %v)", delay)
		require.Zero(t, a.CacheBufferCount(), "cached buffers after ClearCache (delay %v)", delay)
		require.Zero(t, a.CacheMemory())
		v, err := y.Float32s()
		require.NoError(t, err)
		require.Equal(t, float32(4), v[0])
	}
}
