package nn_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/tensor"
)

// TestCheckForward: the checks every family's Forward runs first panic with the
// family's name on a wrong token array, another graph or a wrong cache count.
func TestCheckForward(t *testing.T) {
	g, other := graph.NewCPU(graph.Options{}), graph.NewCPU(graph.Options{})
	tokens := tensor.FromInt32(g, []int32{1, 2, 3}, 1, 3)
	nn.CheckForward("fam", g, tokens, nil, 2)
	nn.CheckForward("fam", g, tokens, make([]cache.Cache, 2), 2)
	require.PanicsWithValue(t, "fam: Forward wants int32 tokens [B, S], got "+tensor.FromInt32(g, []int32{1, 2, 3}, 3).String(), func() {
		nn.CheckForward("fam", g, tensor.FromInt32(g, []int32{1, 2, 3}, 3), nil, 2)
	})
	require.PanicsWithValue(t, "fam: Forward: tokens are on another graph than the model", func() {
		nn.CheckForward("fam", other, tokens, nil, 2)
	})
	require.PanicsWithValue(t, "fam: Forward: 1 caches for 2 layers", func() {
		nn.CheckForward("fam", g, tokens, make([]cache.Cache, 1), 2)
	})
}
