package tensor_test

import (
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/tensor"
)

// TestExplicitRelease checks graph.Options.ExplicitRelease: Synchronize forces no
// collection, a released array's buffer goes at once, and an array dropped without a
// release stays counted (its buffer is live until a collection finds it), which is the
// contract's cost. Without the option, Synchronize collects and finds it.
func TestExplicitRelease(t *testing.T) {
	// No natural collection may find the dropped array behind the test's back.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for _, explicit := range []bool{true, false} {
		g := graph.NewCPU(graph.Options{ExplicitRelease: explicit})
		live := func() int {
			require.NoError(t, g.Synchronize())
			return g.Allocator().LiveBufferCount()
		}
		base := live()
		kept := tensor.FromFloat32(g, []float32{1, 2, 3}, 3)
		require.NoError(t, tensor.Eval(kept))
		dropped := tensor.FromFloat32(g, []float32{4, 5}, 2)
		require.NoError(t, tensor.Eval(dropped))
		require.Equal(t, base+2, live())
		runtime.KeepAlive(dropped)

		tensor.Release(kept)
		dropped = tensor.Array{} // dropped without a release
		if explicit {
			require.Equal(t, base+1, live(), "the released buffer goes; the dropped one waits for a collection")
			require.Zero(t, g.Stats().Collections, "Synchronize forced a collection")
		} else {
			require.Equal(t, base, live(), "Synchronize's collection finds the dropped array")
			require.Positive(t, g.Stats().Collections)
		}
	}
}
