package metal_test

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/internal/golden"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/models"
	"github.com/ingotml/ingot/tensor"
)

// compareGolden runs every golden model through a Metal device made by newGPU (the
// emulated one off macOS, the real one on a Mac) and through the CPU device: prefill
// logits, then greedy decode steps with the cache, must agree within the twins'
// float32 tolerance, token for token.
func compareGolden(t *testing.T, newGPU func(t *testing.T) graph.Device) {
	root, err := golden.Root()
	require.NoError(t, err)
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	sets := 0
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		if _, err := os.Stat(filepath.Join(dir, "config.json")); err != nil || !e.IsDir() {
			continue
		}
		sets++
		t.Run(e.Name(), func(t *testing.T) {
			start := time.Now()
			gpu := newGPU(t)
			cpu, emu := graph.NewCPU(graph.Options{}), graph.New(gpu, graph.Options{})
			mc, err := models.Load(dir, cpu, nn.Options{})
			require.NoError(t, err)
			me, err := models.Load(dir, emu, nn.Options{})
			require.NoError(t, err)
			vocab := mc.VocabSize()
			prompt := make([]int32, 6)
			for i := range prompt {
				prompt[i] = int32((i*7919 + 13) % vocab)
			}
			cc, ce := mc.MakeCache(cache.Lazy), me.MakeCache(cache.Lazy)
			in := [2][]int32{prompt, prompt}
			worst := 0.0
			const steps = 4
			for step := 0; step <= steps; step++ {
				want := logits(t, mc.Forward(tensor.FromInt32(cpu, in[0], 1, len(in[0])), cc))
				got := logits(t, me.Forward(tensor.FromInt32(emu, in[1], 1, len(in[1])), ce))
				require.Len(t, got, len(want))
				for i := range want {
					d := math.Abs(float64(want[i]-got[i])) / math.Max(1, math.Abs(float64(want[i])))
					worst = math.Max(worst, d)
					require.LessOrEqual(t, d, 1e-5, "step %d logit %d: cpu %v metal %v", step, i, want[i], got[i])
				}
				next := [2]int32{argmaxLast(want, vocab), argmaxLast(got, vocab)}
				require.Equal(t, next[0], next[1], "greedy token after step %d", step)
				in = [2][]int32{{next[0]}, {next[1]}}
			}
			t.Logf("%s: prefill of %d tokens and %d decode steps on %s: max relative logit difference %.3g, %v",
				e.Name(), len(prompt), steps, gpu.Name(), worst, time.Since(start).Round(time.Millisecond))
		})
	}
	require.NotZero(t, sets, "no golden models under %s", root)
}

func logits(t *testing.T, a tensor.Array) []float32 {
	t.Helper()
	v, err := a.Float32s()
	require.NoError(t, err)
	return v
}

// argmaxLast is the greedy token of the last row of [.., vocab] logits.
func argmaxLast(v []float32, vocab int) int32 {
	row := v[len(v)-vocab:]
	best := 0
	for i, x := range row {
		if x > row[best] {
			best = i
		}
	}
	return int32(best)
}
