package generate_test

import (
	"errors"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/generate"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/models"
	"github.com/ingotml/ingot/nn/qwen35"
)

func tinyModel(t *testing.T, layers int) (*graph.Graph, *qwen35.Model) {
	t.Helper()
	cfg, err := qwen35.ReproConfig(nn.ReproOptions{Layers: layers, Interval: 3})
	require.NoError(t, err)
	g := graph.NewCPU(graph.Options{})
	m, err := qwen35.NewRandom(cfg, g, 3, nn.Options{})
	require.NoError(t, err)
	return g, m
}

// reproModel builds the repro's random model of a model type through the registry.
func reproModel(t *testing.T, typ string, layers int) (*graph.Graph, nn.Model) {
	t.Helper()
	cfg, err := qwen35.ReproConfig(nn.ReproOptions{ModelType: typ, Layers: layers, Interval: 3})
	require.NoError(t, err)
	raw, err := cfg.MarshalHF()
	require.NoError(t, err)
	g := graph.NewCPU(graph.Options{})
	m, err := models.Random(raw, g, 3, nn.Options{})
	require.NoError(t, err)
	return g, m
}

// drain runs the generator until idle and returns each request's tokens.
func drain(t *testing.T, b *generate.BatchGenerator, onStep func(step int)) map[int][]int32 {
	t.Helper()
	out := map[int][]int32{}
	for step := 0; ; step++ {
		if onStep != nil {
			onStep(step)
		}
		toks, err := b.Next()
		if errors.Is(err, generate.ErrIdle) {
			return out
		}
		require.NoError(t, err)
		for _, tk := range toks {
			require.Equal(t, len(out[tk.ID]), tk.Index)
			out[tk.ID] = append(out[tk.ID], tk.Token)
		}
	}
}

var prompts = [][]int32{{5, 9, 2}, {7, 1, 3, 3, 8, 11, 4}, {2, 6, 10, 12, 1}}

func alone(t *testing.T, m *qwen35.Model, p cache.Policy, prompt []int32, n int) []int32 {
	b := generate.NewBatchGenerator(m, p, 0)
	require.NoError(t, b.Insert(generate.Request{ID: 1, Prompt: prompt, MaxTokens: n}))
	return drain(t, b, nil)[1]
}

// TestBatchedEqualsAlone: requests of different prompt lengths prefilled together
// (right-padded, prepare/finalize) and decoded as one batch produce, per request, the
// tokens each produces alone — and the plain path agrees.
func TestBatchedEqualsAlone(t *testing.T) {
	_, m := tinyModel(t, 6)
	for _, p := range []cache.Policy{cache.Lazy, cache.Eager} {
		b := generate.NewBatchGenerator(m, p, 0)
		for i, pr := range prompts {
			require.NoError(t, b.Insert(generate.Request{ID: i, Prompt: pr, MaxTokens: 10 + 3*i}))
		}
		got := drain(t, b, nil)
		for i, pr := range prompts {
			want := alone(t, m, p, pr, 10+3*i)
			require.Equal(t, want, got[i], "%s: request %d", p, i)
			pl, err := generate.NewPlain(m, p, pr)
			require.NoError(t, err)
			for j, w := range want {
				tok, err := pl.Next()
				require.NoError(t, err)
				require.Equal(t, w, tok, "%s: plain request %d token %d", p, i, j)
			}
		}
	}
}

// TestContinuousBatchingEqualsAlone: requests joining a running batch (merge + extend)
// and leaving it (filter) still get their own tokens.
func TestContinuousBatchingEqualsAlone(t *testing.T) {
	_, m := tinyModel(t, 6)
	for _, p := range []cache.Policy{cache.Lazy, cache.Eager} {
		b := generate.NewBatchGenerator(m, p, 0)
		require.NoError(t, b.Insert(generate.Request{ID: 0, Prompt: prompts[0], MaxTokens: 14}))
		got := drain(t, b, func(step int) {
			switch step {
			case 4:
				require.NoError(t, b.Insert(generate.Request{ID: 1, Prompt: prompts[1], MaxTokens: 6}))
			case 7:
				require.NoError(t, b.Insert(generate.Request{ID: 2, Prompt: prompts[2], MaxTokens: 9}))
			}
		})
		require.Equal(t, alone(t, m, p, prompts[0], 14), got[0], "%s", p)
		require.Equal(t, alone(t, m, p, prompts[1], 6), got[1], "%s", p)
		require.Equal(t, alone(t, m, p, prompts[2], 9), got[2], "%s", p)
	}
}

// TestBatchPathLeakRate: one request through the batch path with the lazy policy grows
// by exactly (GDN layers - 1) live buffers per token; eager and the plain path do not.
// Every repro model type (built through the registry) leaks at the same rate: the
// rate is the number of GDN layers minus one, whatever the MLPs and projections.
func TestBatchPathLeakRate(t *testing.T) {
	const layers, steps = 9, 30 // interval 3: 6 GDN layers
	for _, c := range []struct {
		typ  string
		p    cache.Policy
		want int
	}{{"qwen3_5_moe", cache.Lazy, 5}, {"qwen3_5_moe", cache.Eager, 0}, {"qwen3_5", cache.Lazy, 5},
		{"qwen3_5", cache.Eager, 0}, {"qwen3_next", cache.Lazy, 5}, {"qwen3_next", cache.Eager, 0}} {
		g, m := reproModel(t, c.typ, layers)
		b := generate.NewBatchGenerator(m, c.p, 0)
		require.NoError(t, b.Insert(generate.Request{Prompt: prompts[1], MaxTokens: 1000}))
		for i := 0; i < 3; i++ {
			_, err := b.Next()
			require.NoError(t, err)
		}
		require.NoError(t, g.Synchronize())
		base := g.Allocator().LiveBufferCount()
		for i := 0; i < steps; i++ {
			_, err := b.Next()
			require.NoError(t, err)
		}
		require.NoError(t, g.Synchronize())
		require.Equal(t, base+c.want*steps, g.Allocator().LiveBufferCount(), "%s %s", c.typ, c.p)
		runtime.KeepAlive(b)
	}
	g, m := tinyModel(t, layers)
	pl, err := generate.NewPlain(m, cache.Lazy, prompts[1])
	require.NoError(t, err)
	for i := 0; i < 3; i++ {
		_, err := pl.Next()
		require.NoError(t, err)
	}
	require.NoError(t, g.Synchronize())
	base := g.Allocator().LiveBufferCount()
	for i := 0; i < steps; i++ {
		_, err := pl.Next()
		require.NoError(t, err)
	}
	require.NoError(t, g.Synchronize())
	require.Equal(t, base, g.Allocator().LiveBufferCount(), "plain path never arms the leak")
	runtime.KeepAlive(pl)
}

func TestInsertRejectsBadRequests(t *testing.T) {
	_, m := tinyModel(t, 3)
	b := generate.NewBatchGenerator(m, cache.Eager, 0)
	require.Error(t, b.Insert(generate.Request{ID: 3, MaxTokens: 2}))
	require.Error(t, b.Insert(generate.Request{ID: 4, Prompt: []int32{1}, MaxTokens: 0}))
	require.EqualError(t, b.Insert(generate.Request{ID: 5, Prompt: []int32{1, 128}, MaxTokens: 1}),
		"generate: request 5: prompt token 1 is 128, outside the vocabulary [0, 128)")
	_, err := generate.NewPlain(m, cache.Eager, nil)
	require.Error(t, err)
	_, err = b.Next()
	require.ErrorIs(t, err, generate.ErrIdle)
}

// TestBatchStats: every request costs its MaxTokens rows of decode steps (the first
// token comes from its admit, and one step runs past its last token while the next
// is scheduled before the last is read), however the requests share the steps; one
// request alone is one row a step.
func TestBatchStats(t *testing.T) {
	_, m := tinyModel(t, 6)
	b := generate.NewBatchGenerator(m, cache.Eager, 0)
	require.NoError(t, b.Insert(generate.Request{ID: 0, Prompt: prompts[0], MaxTokens: 9}))
	drain(t, b, nil)
	require.Equal(t, generate.BatchStats{DecodeSteps: 9, DecodeRows: 9}, b.Stats())
	require.Equal(t, 1.0, b.Stats().RowsPerStep())

	maxTokens := []int{5, 11, 7}
	b = generate.NewBatchGenerator(m, cache.Eager, 2)
	for i, pr := range prompts {
		require.NoError(t, b.Insert(generate.Request{ID: i, Prompt: pr, MaxTokens: maxTokens[i]}))
	}
	got := drain(t, b, nil)
	s := b.Stats()
	require.Equal(t, 5+11+7, s.DecodeRows)
	for i, n := range maxTokens {
		require.Len(t, got[i], n)
	}
	// Requests 0 and 1 share 5 steps; request 2 joins as 0 leaves and shares 6 with
	// request 1, then runs its last step alone.
	require.Equal(t, 5+6+1, s.DecodeSteps)
	require.Zero(t, generate.BatchStats{}.RowsPerStep())
}
