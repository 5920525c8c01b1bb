package repro

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/models"
	"github.com/ingotml/ingot/predict"
)

func decode(t *testing.T, layers, limit, tokens int, mode string, p cache.Policy, census bool, h Hooks) *Result {
	t.Helper()
	cfg, err := models.ReproConfig(nn.ReproOptions{Layers: layers})
	require.NoError(t, err)
	g, m, err := Random(graph.CPU(), cfg, 0, limit)
	require.NoError(t, err)
	r := NewResult(g, m, mode, p)
	require.NoError(t, Decode(context.Background(), g, m, r, Options{Tokens: tokens, Period: 25, ClearCacheEvery: 256, Census: census}, h))
	return r
}

// TestLazyCrashesAtThePrediction: 12 layers leak 10 objects a token on the lazy batch
// path and crash exactly at (limit - baseline) / 10; every hook sees the run.
func TestLazyCrashesAtThePrediction(t *testing.T) {
	var starts, baselines, samples, lastStep int
	var last predict.Sample
	h := Hooks{
		Start:    func(*Result) { starts++ },
		Baseline: func(r *Result) { baselines++; require.Greater(t, r.Baseline, 0) },
		Sample:   func(_ *Result, s predict.Sample, _ []graph.CensusSite) { samples++; last = s },
		Step:     func(_ *Result, n int) { lastStep = n },
	}
	r := decode(t, 12, 6000, 100000, "batch", cache.Lazy, false, h)
	require.Equal(t, 11, r.GDN)
	require.Equal(t, 10, r.Rate)
	require.True(t, r.Crashed, "tokens %d", len(r.Tokens))
	require.Equal(t, (6000-r.Baseline)/10, r.CrashToken)
	require.Equal(t, r.PredictedCrash(), r.CrashToken)
	require.Equal(t, predict.Crashed, r.Verdict(0.5))
	sl, ok := predict.FitSlope(r.Samples)
	require.True(t, ok)
	require.InDelta(t, 10.0, sl, 1e-9)
	require.Equal(t, 1, starts)
	require.Equal(t, 1, baselines)
	require.Equal(t, len(r.Samples), samples)
	require.Equal(t, r.CrashToken, lastStep)
	require.Equal(t, r.CrashToken, last.Token, "the last sample is at the crash")
	require.Greater(t, r.Seconds, 0.0)
}

// TestEagerFlatAndCensus: the fix stays flat at the same limit; the census finds the
// lazy run's growing site in cache/lazy.go and none under eager.
func TestEagerFlatAndCensus(t *testing.T) {
	r := decode(t, 8, 499000, 300, "batch", cache.Eager, true, Hooks{})
	require.False(t, r.Crashed)
	require.Len(t, r.Tokens, 300)
	require.Equal(t, predict.Flat, r.Verdict(0.5))
	require.NotNil(t, r.Census)
	require.Empty(t, r.Census.Growing)
	var rows int
	r = decode(t, 8, 499000, 300, "batch", cache.Lazy, true, Hooks{Sample: func(_ *Result, _ predict.Sample, s []graph.CensusSite) { rows += len(s) }})
	require.Equal(t, predict.Leaking, r.Verdict(0.5))
	require.Greater(t, rows, 0)
	require.Len(t, r.Census.Growing, 1)
	g := r.Census.Growing[0]
	require.True(t, strings.HasPrefix(g.Site, "cache/lazy.go:"), g.Site)
	require.InDelta(t, 6.0, g.Slope, 1e-9) // 7 GDN layers - 1
	// The plain path never arms the leak.
	r = decode(t, 8, 499000, 200, "plain", cache.Lazy, false, Hooks{})
	require.Equal(t, 0, r.Rate)
	require.Equal(t, predict.Flat, r.Verdict(0.5))
}

// TestCancelInterrupts: a cancelled context stops the run at its next step, with a
// last sample where it stopped.
func TestCancelInterrupts(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg, err := models.ReproConfig(nn.ReproOptions{Layers: 6})
	require.NoError(t, err)
	g, m, err := Random(graph.CPU(), cfg, 0, 499000)
	require.NoError(t, err)
	r := NewResult(g, m, "batch", cache.Lazy)
	h := Hooks{Step: func(_ *Result, n int) {
		if n == 110 {
			cancel()
		}
	}}
	require.NoError(t, Decode(ctx, g, m, r, Options{Tokens: 1000, Period: 25}, h))
	require.True(t, r.Interrupted)
	require.Len(t, r.Tokens, 110)
	require.Equal(t, 110, r.Samples[len(r.Samples)-1].Token)
}

// TestBelowBaseline: a limit under the weights, or under the first token, is a
// *BaselineError wrapping the limit error.
func TestBelowBaseline(t *testing.T) {
	cfg, err := models.ReproConfig(nn.ReproOptions{Layers: 6})
	require.NoError(t, err)
	_, _, err = Random(graph.CPU(), cfg, 0, 50)
	var be *BaselineError
	require.True(t, errors.As(err, &be), "%v", err)
	require.Equal(t, "its weight arrays alone need more buffer objects than that: [metal::malloc] Resource limit (50) exceeded.", err.Error())
	require.True(t, IsLimit(err))
	// Enough for the weights (about 120 arrays), not for a decode step.
	g, m, err := Random(graph.CPU(), cfg, 0, 135)
	require.NoError(t, err)
	r := NewResult(g, m, "batch", cache.Lazy)
	err = Decode(context.Background(), g, m, r, Options{Tokens: 100, Period: 10}, Hooks{})
	require.True(t, errors.As(err, &be), "%v", err)
	require.Contains(t, be.Why, "need more buffer objects than that")
}

// TestChurn: under churn the lazy batch leaks per completed request, eager does not.
func TestChurn(t *testing.T) {
	for _, p := range []cache.Policy{cache.Lazy, cache.Eager} {
		cfg, err := models.ReproConfig(nn.ReproOptions{Layers: 6})
		require.NoError(t, err)
		g, m, err := Random(graph.CPU(), cfg, 0, 499000)
		require.NoError(t, err)
		r := NewResult(g, m, "server", p)
		var done []int
		h := Hooks{Request: func(_ *Result, s predict.Sample, _ int) { done = append(done, s.Token) }}
		require.NoError(t, Churn(context.Background(), g, m, r, ChurnOptions{Requests: 10, RequestTokens: 30, Concurrency: 3, PromptLen: 8}, h))
		require.Equal(t, []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, done, p)
		require.Len(t, r.Tokens, 300, p)
		want := map[cache.Policy]predict.Verdict{cache.Lazy: predict.Leaking, cache.Eager: predict.Flat}[p]
		require.Equal(t, want, r.Verdict(0.5), p)
	}
}
