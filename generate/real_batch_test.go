package generate_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/generate"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/models"
)

// TestBatchedEqualsAloneReal is TestBatchedEqualsAlone on the real-size checkpoints
// of BenchmarkDecodeReal (4-bit, 8-bit, bfloat16): four requests decoded as one batch
// take the blocked products (a step's rows share one pass over the weights, and
// prompts of several tokens are prefilled through them), one request alone the
// one-row kernels; each request must get the same tokens. Skipped without
// INGOT_REAL_MODELS.
func TestBatchedEqualsAloneReal(t *testing.T) {
	dir := os.Getenv("INGOT_REAL_MODELS")
	if dir == "" {
		t.Skip("INGOT_REAL_MODELS is not set (scripts/bench-real.sh makes the models)")
	}
	prompts := [][]int32{{5, 9, 2}, {7, 1, 3, 3, 8, 11, 4}, {2, 6, 10, 12, 1}, {900, 31, 4}}
	const tokens = 5
	for _, name := range []string{"q4", "q8", "bf16"} {
		g := graph.NewCPU(graph.Options{})
		m, err := models.Load(filepath.Join(dir, name), g, nn.Options{})
		require.NoError(t, err)
		b := generate.NewBatchGenerator(m, cache.Eager, 0)
		for i, pr := range prompts {
			require.NoError(t, b.Insert(generate.Request{ID: i, Prompt: pr, MaxTokens: tokens}))
		}
		got := drain(t, b, nil)
		for i, pr := range prompts {
			one := generate.NewBatchGenerator(m, cache.Eager, 0)
			require.NoError(t, one.Insert(generate.Request{ID: 1, Prompt: pr, MaxTokens: tokens}))
			require.Equal(t, drain(t, one, nil)[1], got[i], "%s: request %d", name, i)
		}
	}
}
