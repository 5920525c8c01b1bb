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

// TestPromptScratchReleased checks that a prompt's buffers leave the allocator's cache
// once the batch decodes (mlx-lm clears its cache after a prefill): right after the
// admit the cache is empty, and two decode steps later a 500-token prompt leaves no
// more cached than a 2-token one, but for the decode step's own buffers that grow with
// the context (each attention layer's keys and values read up to 512 positions, and
// its mask and scores). Without the clears the prompt's scratch stays cached for the
// batch's life (about 10 MB here).
func TestPromptScratchReleased(t *testing.T) {
	cfg, err := qwen35.ReproConfig(nn.ReproOptions{Layers: 4, Interval: 3})
	require.NoError(t, err)
	cached := func(promptLen int) (afterAdmit, afterTwo int64) {
		g := graph.NewCPU(graph.Options{})
		m, err := qwen35.NewRandom(cfg, g, 3, nn.Options{})
		require.NoError(t, err)
		b := generate.NewBatchGenerator(m, cache.Eager, 0)
		prompt := make([]int32, promptLen)
		for i := range prompt {
			prompt[i] = int32(1 + i%50)
		}
		require.NoError(t, b.Insert(generate.Request{Prompt: prompt, MaxTokens: 8}))
		_, err = b.Next() // the admit
		require.NoError(t, err)
		require.NoError(t, g.Synchronize())
		afterAdmit = g.Allocator().CacheMemory()
		for range 2 {
			_, err := b.Next()
			require.NoError(t, err)
		}
		require.NoError(t, g.Synchronize())
		return afterAdmit, g.Allocator().CacheMemory()
	}
	admitShort, short := cached(2)
	admitLong, long := cached(500)
	t.Logf("cache after the admit: %d / %d bytes, after two steps: %d / %d bytes (prompt 2 / 500)",
		admitShort, admitLong, short, long)
	require.Zero(t, admitShort, "the prompt forward's buffers are cached after its admit")
	require.Zero(t, admitLong, "the prompt forward's buffers are cached after its admit")
	attn := int64(cfg.NumLayers - cfg.NumGDN())
	context := attn * (2*int64(cfg.NumKVHeads*512*cfg.HeadDim*4) + 16<<10)
	require.LessOrEqual(t, long, short+context,
		"a 500-token prompt leaves %d bytes more cached than a 2-token one", long-short)
}
