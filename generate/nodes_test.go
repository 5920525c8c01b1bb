package generate_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/generate"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/qwen35"
)

// TestNodesPerToken pins the graph nodes one decode step of the repro's default model
// (50 layers: 49 GDN + 1 attention, MoE) builds on the batch path. Fused: per GDN layer
// the conv window, the GDN step, the two state views and the MoE block; the lazy
// policy's device-array bookkeeping (left_padding -= 1 per GDN cache) adds 97. Unfused:
// the op-by-op path the fused kernels replace. The dense model (--model-type qwen3_5)
// fuses to the same count: its MLP block is one node like the MoE block.
func TestNodesPerToken(t *testing.T) {
	for _, c := range []struct {
		typ     string
		unfused bool
		policy  cache.Policy
		want    uint64
	}{
		{"", false, cache.Lazy, 396}, {"", false, cache.Eager, 299},
		{"", true, cache.Lazy, 2620}, {"", true, cache.Eager, 2523},
		{qwen35.TypeQwen35, false, cache.Eager, 299}, {qwen35.TypeQwen35, true, cache.Eager, 1923},
	} {
		cfg, err := qwen35.ReproConfig(nn.ReproOptions{ModelType: c.typ})
		require.NoError(t, err)
		g := graph.NewCPU(graph.Options{})
		m, err := qwen35.NewRandom(cfg, g, 0, nn.Options{Unfused: c.unfused})
		require.NoError(t, err)
		b := generate.NewBatchGenerator(m, c.policy, 0)
		require.NoError(t, b.Insert(generate.Request{Prompt: []int32{1, 2, 3, 4, 5, 6, 7, 8}, MaxTokens: 100}))
		for i := 0; i < 3; i++ { // prefill and the first decode steps
			_, err := b.Next()
			require.NoError(t, err)
		}
		const steps = 5
		before := g.Stats().Created
		for i := 0; i < steps; i++ {
			_, err := b.Next()
			require.NoError(t, err)
		}
		got := (g.Stats().Created - before) / steps
		require.Equal(t, c.want, got, "%s unfused %v, %v", c.typ, c.unfused, c.policy)
		require.Equal(t, uint64(0), (g.Stats().Created-before)%steps, "every step builds the same nodes")
	}
}
