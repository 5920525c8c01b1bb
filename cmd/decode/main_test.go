package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/predict"
)

// decode runs the command in-process and returns its exit code, output and JSON report.
func decode(t *testing.T, args ...string) (int, string, map[string]any) {
	t.Helper()
	js := filepath.Join(t.TempDir(), "run.json")
	var out, errb bytes.Buffer
	code := run(append(args, "--json-out", js), &out, &errb)
	var j map[string]any
	if b, err := os.ReadFile(js); err == nil {
		require.NoError(t, json.Unmarshal(b, &j))
	}
	return code, out.String() + errb.String(), j
}

func tokens(j map[string]any) []any { return j["tokens"].([]any) }

// Small shapes keep the suite fast; the figures scale exactly (slope = GDN layers - 1).
func TestLazyLeaksEagerFlat(t *testing.T) {
	code, out, j := decode(t, "--layers", "12", "--tokens", "400", "--report-every", "25")
	require.Equal(t, exitLeak, code, out)
	require.Equal(t, 10.0, j["slope_per_token"], out) // 11 GDN layers - 1
	require.Equal(t, true, j["leaking"])
	require.Contains(t, out, "[predict] leak ~10 objects/token")
	require.Contains(t, out, "[verdict] LEAKING: +10.0 LIVE buffer objects/token")
	// The growth is in the 4-byte class: one int32 scalar per link, 10 links per token
	// between the first sample (token 25) and the last (400). Other classes move only by
	// the attention layer's KV storage growing in 256-token blocks.
	rows := regexp.MustCompile(`(?m)^\s+(\d+ \S+)\s+\d+ ->\s+\d+\s+([+-]\d+)`).FindAllStringSubmatch(out, -1)
	require.NotEmpty(t, rows, out)
	for _, r := range rows {
		d, err := strconv.Atoi(r[2])
		require.NoError(t, err)
		if r[1] == "4 B" {
			require.Equal(t, 10*(400-25), d, out)
		} else {
			require.LessOrEqual(t, abs(d), 2, "class %s drifted by %d\n%s", r[1], d, out)
		}
	}

	code, out, je := decode(t, "--layers", "12", "--tokens", "400", "--report-every", "25", "--cache", "eager")
	require.Equal(t, exitFlat, code, out)
	require.LessOrEqual(t, math.Abs(je["slope_per_token"].(float64)), 0.01)
	require.Equal(t, tokens(j), tokens(je), "the fix changes no token")
	require.Equal(t, "eager", je["cache"])
	// The fix's own run predicts no crash: its baseline has no links to subtract, and
	// the stock path's rate is named, not turned into a crash token it will not reach.
	require.Contains(t, out, "[predict] eager bookkeeping (the fix) -> no leak expected; the stock lazy path leaks ~10 objects/token")
	require.NotContains(t, out, "crash near token")
	require.Nil(t, je["expected_crash_token"])
	first := je["samples"].([]any)[0].([]any)[1].(map[string]any)
	require.Equal(t, first["live"], je["baseline_live"], "an eager baseline is its live count: no links to subtract")
}

func TestControlsAreFlat(t *testing.T) {
	for _, args := range [][]string{
		{"--attention-only", "--layers", "6"},
		{"--mode", "plain", "--layers", "12"},
		{"--layers", "12", "--eval-cache-every", "25"},
	} {
		code, out, j := decode(t, append(args, "--tokens", "300", "--report-every", "25")...)
		require.Equal(t, exitFlat, code, "%v\n%s", args, out)
		require.LessOrEqual(t, math.Abs(j["slope_per_token"].(float64)), 0.01, "%v", args)
	}
}

func TestIntervalFourSlope(t *testing.T) {
	// 16 layers with interval 4: 12 GDN layers -> 11 objects/token (48/4 gives 35).
	code, out, j := decode(t, "--layers", "16", "--interval", "4", "--tokens", "300", "--report-every", "25")
	require.Equal(t, exitLeak, code, out)
	require.Equal(t, 11.0, j["slope_per_token"])
	require.EqualValues(t, 12, j["n_ssm"])
}

func TestCrashAtPredictedToken(t *testing.T) {
	code, out, j := decode(t, "--layers", "12", "--limit", "8000", "--tokens", "5000", "--report-every", "100")
	require.Equal(t, exitCrash, code, out)
	require.Contains(t, out, "[verdict] CRASH REPRODUCED: [metal::malloc] Resource limit (8000) exceeded.")
	base := j["baseline_live"].(float64)
	want := (8000 - base) / 10
	got := j["crash_token"].(float64)
	require.InDelta(t, want, got, want*0.01, "crash token %v, predicted %v", got, want)
	require.Equal(t, true, j["crashed"])
	require.EqualValues(t, 8000, j["resource_limit"])
	// The last sample is taken at the crash, with the chains still held: live buffers
	// are at the limit (the cache was dropped before the failing malloc).
	ss := j["samples"].([]any)
	last := ss[len(ss)-1].([]any)[1].(map[string]any)
	require.Greater(t, last["live"].(float64), 0.99*8000, out)
}

func TestUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"--mode", "nope"}, {"--cache", "sometimes"}, {"--tokens", "0"}, {"--layers", "-1"},
		{"--device", "tpu"}, {"--hidden", "50"}, {"--bogus"}, {"extra"},
	} {
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		require.Equal(t, exitUsage, code, "%v: %s", args, errb.String())
		require.True(t, strings.HasPrefix(errb.String(), "decode: usage: ") || strings.Contains(errb.String(), "flag provided but not defined"), "%v: %q", args, errb.String())
	}
}

func TestComparePlot(t *testing.T) {
	svg := filepath.Join(t.TempDir(), "cmp.svg")
	code, out, j := decode(t, "--compare", "--layers", "8", "--tokens", "200", "--report-every", "25", "--plot", svg)
	require.Equal(t, exitLeak, code, out)
	runs := j["runs"].([]any)
	require.Len(t, runs, 2)
	b, err := os.ReadFile(svg)
	require.NoError(t, err)
	require.Equal(t, 3, strings.Count(string(b), "<polyline"), "one line per run")
	require.Contains(t, string(b), "resource limit")
}

func TestSlopeWindow(t *testing.T) {
	// samples[len/4 : len-1]: the first quarter and the last sample are ignored.
	ss := []predict.Sample{{Token: 0, Live: 999}, {Token: 1, Live: 10}, {Token: 2, Live: 12}, {Token: 3, Live: 14}, {Token: 4, Live: 0}}
	sl, ok := slope(ss)
	require.InDelta(t, 2.0, sl, 1e-12)
	require.False(t, ok, "5 samples are too few for a verdict")
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// TestCensusNamesTheAdvanceSite: on the lazy policy the census's only growing site is
// the cache's advance line (left_padding -= n) with slope GDN layers - 1; eager: none.
func TestCensusNamesTheAdvanceSite(t *testing.T) {
	code, out, j := decode(t, "--layers", "8", "--tokens", "300", "--report-every", "25", "--census")
	require.Equal(t, exitLeak, code, out)
	growing := j["census"].(map[string]any)["growing_sites"].([]any)
	require.Len(t, growing, 1, out)
	top := growing[0].(map[string]any)
	require.Equal(t, lazySubSite(t), top["site"], out)
	require.Equal(t, "binary_sub", top["op"])
	require.Equal(t, 6.0, top["slope_per_token"]) // 7 GDN layers - 1
	require.Contains(t, out, "[census] sites whose unevaluated nodes grow with tokens")

	code, out, j = decode(t, "--layers", "8", "--tokens", "300", "--report-every", "25", "--census", "--cache", "eager")
	require.Equal(t, exitFlat, code, out)
	require.Empty(t, j["census"].(map[string]any)["growing_sites"], out)
	require.Contains(t, out, "[census] no site grows with tokens")
}

// lazySubSite is the census site of the lazy policy's subtraction: the line of
// cache/lazy.go that calls tensor.SubScalar.
func lazySubSite(t *testing.T) string {
	b, err := os.ReadFile("../../cache/lazy.go")
	require.NoError(t, err)
	var lines []int
	for i, l := range strings.Split(string(b), "\n") {
		if strings.Contains(l, "tensor.SubScalar(") {
			lines = append(lines, i+1)
		}
	}
	require.Len(t, lines, 1, "one subtraction in cache/lazy.go")
	return fmt.Sprintf("cache/lazy.go:%d cache.(*lazyField).sub", lines[0])
}

// TestServerChurn: under continuous batching every request is far below the
// per-completion threshold, yet the lazy policy's live count grows across churn (the
// batch never drains); the eager policy stays flat.
func TestServerChurn(t *testing.T) {
	args := []string{"--mode", "server", "--layers", "6", "--requests", "12", "--request-tokens", "40", "--concurrency", "3"}
	code, out, j := decode(t, args...)
	require.Equal(t, exitLeak, code, out)
	// Per completed request: at least the per-token leak ((5 GDN - 1) links) over the
	// 40/3 steps between completions; filter/extend add more on top.
	require.GreaterOrEqual(t, j["slope_per_request"].(float64), 4*40/3.0, out)
	require.Contains(t, out, "[verdict] LEAKING across churn")
	code, out, j = decode(t, append(args, "--cache", "eager")...)
	require.Equal(t, exitFlat, code, out)
	require.Equal(t, 0.0, j["slope_per_request"], out)
	require.Contains(t, out, "[verdict] FLAT across churn")
	// Every request costs its 40 rows of decode steps; requests arrive 40/3 steps
	// apart, so the steps average fewer rows than the concurrency.
	require.Equal(t, 12.0*40, j["decode_rows"], out)
	steps, rows := j["decode_steps"].(float64), j["rows_per_step"].(float64)
	require.InDelta(t, 12*40/steps, rows, 5e-4, out)
	require.Less(t, rows, 3.0, out)
	require.Contains(t, out, fmt.Sprintf("; %d decode steps of %.2f rows on average\n", int(steps), rows))
	code, out, j = decode(t, append(args, "--cache", "eager", "--concurrency", "1")...)
	require.Equal(t, exitFlat, code, out)
	require.Equal(t, j["decode_rows"], j["decode_steps"], out)
	require.Equal(t, 1.0, j["rows_per_step"], out)
}
