package tensor_test

import (
	"errors"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/alloc"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/tensor"
)

// live is the exact number of live (non-cached) buffers after Synchronize.
func live(t *testing.T, g *graph.Graph) int {
	t.Helper()
	require.NoError(t, g.Synchronize())
	return g.Allocator().LiveBufferCount()
}

// TestDeadChainGrowsByOnePerStep replays the leak in miniature: lp = lp - 1 with a fresh
// scalar each step, never evaluated, pins one buffer per step.
func TestDeadChainGrowsByOnePerStep(t *testing.T) {
	for run := 0; run < 2; run++ { // the same counts every time
		g := graph.NewCPU(graph.Options{})
		lp := tensor.FromInt32(g, []int32{0, 0, 0}, 3)
		base := live(t, g)
		require.Equal(t, 1, base)
		const n = 500
		for i := 0; i < n; i++ {
			lp = tensor.SubScalar(lp, 1)
		}
		require.Equal(t, base+n, live(t, g), "one scalar buffer per link")
		require.Equal(t, 2*n+1, g.Stats().Nodes, "every link and its scalar are live nodes")

		require.NoError(t, tensor.Eval(lp))
		require.Equal(t, base, live(t, g), "evaluating the newest node frees the chain")
		v, err := lp.Int32s()
		require.NoError(t, err)
		require.Equal(t, []int32{-n, -n, -n}, v)
	}
}

func TestEvaluatedChainStaysFlat(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	lp := tensor.FromInt32(g, []int32{0}, 1)
	base := live(t, g)
	for i := 0; i < 300; i++ {
		lp = tensor.SubScalar(lp, 1)
		require.NoError(t, tensor.Eval(lp))
	}
	require.Equal(t, base, live(t, g))
	v, err := lp.Item()
	require.NoError(t, err)
	require.Equal(t, -300.0, v)
}

func TestDroppedChainIsFreed(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	base := live(t, g)
	lp := tensor.FromInt32(g, []int32{7}, 1)
	for i := 0; i < 100; i++ {
		lp = tensor.SubScalar(lp, 1)
	}
	require.Equal(t, base+101, live(t, g))
	// Go's liveness is precise: a variable holds its array until its last use.
	runtime.KeepAlive(lp)
	require.Equal(t, base, live(t, g), "the last reference dropped frees the whole chain")
	require.Equal(t, 0, g.Stats().Nodes)
}

// TestResourceLimitAtPredictedStep: with a small limit the unevaluated loop fails exactly
// when live buffers reach it, and the allocator is consistent afterwards.
func TestResourceLimitAtPredictedStep(t *testing.T) {
	const limit = 1000
	g := graph.NewCPU(graph.Options{Alloc: alloc.Config{ResourceLimit: limit}})
	lp := tensor.FromInt32(g, []int32{0, 0}, 2)
	base := live(t, g)
	failAt := -1
	for i := 1; i <= 2*limit; i++ {
		lp = tensor.SubScalar(lp, 1)
		if lp.Err() != nil {
			failAt = i
			break
		}
	}
	require.Equal(t, limit-base+1, failAt, "step whose scalar is buffer number limit+1")
	var rle *alloc.ResourceLimitError
	require.True(t, errors.As(lp.Err(), &rle))
	require.Equal(t, "[metal::malloc] Resource limit (1000) exceeded.", lp.Err().Error())
	require.Equal(t, limit, g.Allocator().ActiveBufferCount())

	// Eval reports it too.
	require.ErrorAs(t, tensor.Eval(lp), &rle)

	lp = tensor.FromInt32(g, []int32{5}, 1)
	_ = g.Synchronize() // may report the recorded build error once
	require.Equal(t, base, live(t, g))
	x := tensor.AddScalar(lp, 1)
	v, err := x.Item()
	require.NoError(t, err)
	require.Equal(t, 6.0, v)
}
