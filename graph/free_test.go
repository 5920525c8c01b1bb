package graph_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/kernels"
	"github.com/ingotml/ingot/tensor"
)

// chainInc adds 1 to every float32 of its input. It never donates its input's buffer,
// so every link of a chain gets a buffer of its own.
var chainInc = &kernels.Kernel{Name: "test_chain_inc", CPU: func(l *kernels.Launch) {
	in, out := kernels.F32(l.Args[0].Data), kernels.F32(l.Out().Data)
	for i := range out {
		out[i] = in[i] + 1
	}
}}

// chainRun evaluates a chain of links chainInc ops over elems zeros, built in a scope
// (so only the chain's own edges hold its intermediates, as in a model's forward), and
// returns the allocator's peak bytes beyond the input, the counts after Synchronize
// (active, cached) and the result's first and last values.
func chainRun(t *testing.T, dev graph.Device, opt graph.Options, links, elems int) (peak int64, counts [2]int, ends [2]float32) {
	t.Helper()
	g := graph.New(dev, opt)
	a := g.Allocator()
	x := tensor.FromFloat32(g, make([]float32, elems), elems)
	require.NoError(t, g.Synchronize())
	base := a.ActiveMemory()
	a.ResetPeakMemory()
	var y tensor.Array
	tensor.WithScope(g, func() {
		h := x.Handle()
		for range links {
			h = g.Apply(chainInc, nil, kernels.Float32, []int{elems}, h)
		}
		y = tensor.Keep(tensor.Wrap(h))
	})
	v, err := y.Float32s()
	require.NoError(t, err)
	peak = a.PeakMemory() - base
	tensor.Release(y)
	require.NoError(t, g.Synchronize())
	return peak, [2]int{a.ActiveBufferCount(), a.CacheBufferCount()}, [2]float32{v[0], v[elems-1]}
}

// TestChainPeakIsAFewBuffers: inside one evaluation an intermediate returns to the
// allocator once its last consumer has run, as MLX frees an array's data when nothing
// holds it any more. A chain of 64 links of 1 MiB each, cut into batches of one
// buffer's bytes, peaks at exactly two of its buffers (the link being written and the
// one it reads), not their sum, which is what it peaks at when batches are never cut.
func TestChainPeakIsAFewBuffers(t *testing.T) {
	const links, elems = 64, 1 << 18 // 1 MiB a link
	const size = elems * 4
	peak, _, ends := chainRun(t, graph.CPU(), graph.Options{BatchBytes: size}, links, elems)
	require.Equal(t, [2]float32{links, links}, ends)
	require.Equal(t, int64(2*size), peak, "peak scratch of a %d-link chain, %d bytes a link", links, size)

	whole, _, ends := chainRun(t, graph.CPU(), graph.Options{BatchBytes: -1}, links, elems)
	require.Equal(t, [2]float32{links, links}, ends)
	require.Equal(t, int64(links*size), whole, "one batch holds every intermediate to its end")
}

// TestChainPeakDefault: with the default options a chain of 48 links of 2 MiB (96 MiB
// in all) peaks within one batch of DefaultBatchBytes and a buffer, well under its sum.
func TestChainPeakDefault(t *testing.T) {
	const links, elems = 48, 1 << 19 // 2 MiB a link
	peak, _, ends := chainRun(t, graph.CPU(), graph.Options{}, links, elems)
	require.Equal(t, [2]float32{links, links}, ends)
	t.Logf("peak %d MiB of a %d MiB chain", peak>>20, links*elems*4>>20)
	require.LessOrEqual(t, peak, int64(graph.DefaultBatchBytes+elems*4))
}

// TestChainCutIndependentOfWorkerSpeed: the cut batches free at the graph's waits,
// never because the worker happened to finish sooner, so the peak and the counts are
// the same with a slow device as with a fast one, and with a synchronous executor.
func TestChainCutIndependentOfWorkerSpeed(t *testing.T) {
	const links, elems = 24, 1 << 16
	opt := graph.Options{BatchBytes: 3 * elems * 4, ExplicitRelease: true}
	fastPeak, fastCounts, _ := chainRun(t, graph.CPU(), opt, links, elems)
	slowPeak, slowCounts, _ := chainRun(t, &slowDevice{Device: graph.CPU(), delay: 2 * time.Millisecond}, opt, links, elems)
	require.Equal(t, fastPeak, slowPeak)
	require.Equal(t, fastCounts, slowCounts)
	opt.Sync = true
	syncPeak, syncCounts, _ := chainRun(t, graph.CPU(), opt, links, elems)
	require.Equal(t, fastPeak, syncPeak)
	require.Equal(t, fastCounts, syncCounts)
}
