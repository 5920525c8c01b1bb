package qwen35

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/internal/golden"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/tensor"
)

var prompt = []int32{1, 2, 3, 4, 5, 6, 7, 8}

// TestNewRandomDeterministic: the seed alone decides the weights.
func TestNewRandomDeterministic(t *testing.T) {
	cfg, err := ReproConfig(nn.ReproOptions{Layers: 4, Interval: 2})
	require.NoError(t, err)
	logits := func(seed int64) []float32 {
		g := graph.NewCPU(graph.Options{})
		m, err := NewRandom(cfg, g, seed, nn.Options{})
		require.NoError(t, err)
		return golden.Forward(t, m, [][]int32{prompt}, m.MakeCache(cache.Eager))
	}
	a, b, c := logits(7), logits(7), logits(8)
	require.Equal(t, math32bits(a), math32bits(b))
	require.Greater(t, golden.MaxDiff(t, a, c), 1e-3, "another seed, other weights")
}

// TestNewRandomRepro builds the leak repro's 50-layer model fast, with one live buffer
// per weight, and checks its logits are finite and O(1).
func TestNewRandomRepro(t *testing.T) {
	cfg, err := ReproConfig(nn.ReproOptions{})
	require.NoError(t, err)
	g := graph.NewCPU(graph.Options{})
	start := time.Now()
	m, err := NewRandom(cfg, g, 0, nn.Options{})
	elapsed := time.Since(start)
	require.NoError(t, err)
	t.Logf("built %d layers in %v", cfg.NumLayers, elapsed)
	require.Less(t, elapsed, time.Second)

	// Per GDN layer 2 norms + 4 in-projections + conv + A + dt_bias + norm + out = 11,
	// per attention layer 2 norms + 4 projections + 2 head norms = 8, per MoE block
	// router + 3 expert stacks + 3 shared + shared gate = 8; plus embed, norm, lm_head
	// and the 3 constants.
	want := 11*cfg.NumGDN() + 8*(cfg.NumLayers-cfg.NumGDN()) + 8*cfg.NumLayers + 3 + 3
	require.Equal(t, want, live(t, g))

	got := golden.Forward(t, m, [][]int32{prompt}, m.MakeCache(cache.Eager))
	var sum, sq float64
	for _, x := range got {
		require.False(t, math.IsNaN(float64(x)) || math.IsInf(float64(x), 0))
		sum += float64(x)
		sq += float64(x) * float64(x)
	}
	n := float64(len(got))
	std := math.Sqrt(sq/n - (sum/n)*(sum/n))
	t.Logf("logit std %.3f", std)
	require.Greater(t, std, 0.05)
	require.Less(t, std, 10.0)
}

// BenchmarkDecodeStepRepro times one B=1 decode step of the leak repro's model (plain
// caches), logits evaluated. Caches restart every 200 steps so the KV length stays short.
func BenchmarkDecodeStepRepro(b *testing.B) {
	cfg, err := ReproConfig(nn.ReproOptions{})
	require.NoError(b, err)
	g := graph.NewCPU(graph.Options{})
	m, err := NewRandom(cfg, g, 0, nn.Options{})
	require.NoError(b, err)
	var caches []cache.Cache
	steps := 0
	reset := func() {
		caches = m.MakeCache(cache.Eager)
		golden.Forward(b, m, [][]int32{prompt}, caches)
		steps = 0
	}
	reset()
	tok := []int32{9}
	b.ReportAllocs()
	for b.Loop() {
		if steps == 200 {
			b.StopTimer()
			reset()
			b.StartTimer()
		}
		logits := m.Forward(tensor.FromInt32(g, tok, 1, 1), caches)
		if err := tensor.Eval(logits); err != nil {
			b.Fatal(err)
		}
		steps++
	}
}
