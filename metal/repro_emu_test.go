//go:build !darwin

package metal_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/generate"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/kernels/msltest"
	"github.com/ingotml/ingot/metal"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/qwen35"
)

// TestReproOnEmulatedMetal is the test-only form of `decode --device metal`: the leak
// repro's random MoE model decodes with mlx-lm's batch path and lazy cache on the CPU
// device and through metal.GPU.Run on the executing backend. The tokens and, every 50
// tokens, the allocator's live buffer count (cmd/decode's "live", which the lazy cache
// makes grow by one a token) must be the same on both.
func TestReproOnEmulatedMetal(t *testing.T) {
	if testing.Short() {
		t.Skip("decodes 200 tokens on the MSL emulator")
	}
	const tokens, every = 200, 50
	cfg, err := qwen35.ReproConfig(nn.ReproOptions{Layers: 4, Interval: 2})
	require.NoError(t, err)
	start := time.Now()
	gpu := metal.NewEmulatedGPU(t, metal.GPUOptions{}, msltest.OrderForward)
	type run struct {
		g      *graph.Graph
		b      *generate.BatchGenerator
		tokens []int32
		live   []int
		active []int
	}
	runs := []*run{{g: graph.NewCPU(graph.Options{})}, {g: graph.New(gpu, graph.Options{})}}
	for _, r := range runs {
		m, err := qwen35.NewRandom(cfg, r.g, 1, nn.Options{})
		require.NoError(t, err)
		r.b = generate.NewBatchGenerator(m, cache.Lazy, 0)
		require.NoError(t, r.b.Insert(generate.Request{ID: 0, Prompt: []int32{1, 2, 3, 4, 5, 6, 7, 8}, MaxTokens: tokens + 1}))
	}
	for _, r := range runs {
		for len(r.tokens) < tokens {
			toks, err := r.b.Next()
			require.NoError(t, err)
			for _, tk := range toks {
				r.tokens = append(r.tokens, tk.Token)
			}
			if n := len(r.tokens); n%every == 0 && len(toks) > 0 {
				require.NoError(t, r.g.Synchronize()) // a full collection first, as decode's samples
				a := r.g.Allocator()
				r.live = append(r.live, a.LiveBufferCount())
				r.active = append(r.active, a.ActiveBufferCount())
			}
		}
	}
	require.Equal(t, runs[0].tokens, runs[1].tokens, "tokens")
	require.Equal(t, runs[0].live, runs[1].live, "live buffers every %d tokens", every)
	require.Greater(t, runs[0].live[len(runs[0].live)-1], runs[0].live[0], "the lazy cache leaks on both")
	n, _ := metal.EmulatedStats(gpu)
	// Active buffers (live plus the allocator's cache) are logged, not compared: what the
	// cache keeps depends on each device's limits.
	t.Logf("%d tokens, %d dispatches on the emulator; live buffers %v; active cpu %v, metal %v; %v",
		tokens, n, runs[1].live, runs[0].active, runs[1].active, time.Since(start).Round(time.Millisecond))
}
