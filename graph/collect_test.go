package graph_test

import (
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/tensor"
)

// TestGraphIsCollected: a graph the program drops is garbage-collected with its
// worker goroutine (nothing internal keeps it reachable).
func TestGraphIsCollected(t *testing.T) {
	before := runtime.NumGoroutine()
	for i := 0; i < 20; i++ {
		g := graph.NewCPU(graph.Options{})
		x := tensor.AddScalar(tensor.FromFloat32(g, []float32{1, 2}, 2), 1)
		require.NoError(t, tensor.Eval(x))
	}
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before+2 && time.Now().Before(deadline) {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
	}
	require.LessOrEqual(t, runtime.NumGoroutine(), before+2, "workers of dropped graphs must exit")
}
