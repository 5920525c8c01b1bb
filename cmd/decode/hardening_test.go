package main

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/alloc"
	"github.com/ingotml/ingot/nn/models"
	"github.com/ingotml/ingot/predict"
)

// usage runs the command and requires exit 64 with want in the message.
func usage(t *testing.T, want string, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	require.Equal(t, exitUsage, code, "%v\n%s%s", args, out.String(), errb.String())
	require.Contains(t, errb.String(), want, "%v", args)
	require.NotContains(t, out.String(), "tok ", "%v: refused only after decoding", args)
	return errb.String()
}

// TestSamplingDenseEnough: a --report-every longer than the run is shortened so the
// slope window holds enough samples; the verdict is then the true slope.
func TestSamplingDenseEnough(t *testing.T) {
	code, out, j := decode(t, "--layers", "6", "--tokens", "200", "--report-every", "5000")
	require.Equal(t, exitLeak, code, out)
	require.Equal(t, 4.0, j["slope_per_token"], out) // 5 GDN layers - 1
	require.Contains(t, out, "[note] --report-every 5000 -> 25: the slope needs at least 8 samples")
	require.Len(t, j["samples"], 8, out)
	usage(t, "--tokens 1 is too few for a verdict: the slope needs at least 8 samples (--tokens >= 8)",
		"--tokens", "1")
	usage(t, "--tokens 7 is too few", "--tokens", "7")
}

func TestFailSlopeValidated(t *testing.T) {
	for _, v := range []string{"NaN", "Inf", "+Inf", "-Inf", "-1", "-0.001"} {
		usage(t, "--fail-slope must be a finite number >= 0, not "+v, "--fail-slope", v)
	}
}

func TestLimitBelowBaseline(t *testing.T) {
	// The weights alone (the estimate counts them: TestWeightEstimate).
	for _, mode := range []string{"batch", "plain", "server"} {
		msg := usage(t, "--limit 100 is below this model's baseline: its ", "--layers", "6", "--limit", "100", "--mode", mode)
		require.Regexp(t, `its \d+ weight arrays alone need more buffer objects than that \(raise the limit\)`, msg)
	}
	// The weights fit; the first token does not.
	for _, mode := range []string{"batch", "server"} {
		msg := usage(t, "--limit 150 is below this model's baseline: the model and its ", "--layers", "6", "--limit", "150", "--mode", mode)
		require.NotContains(t, msg, "CRASH", mode)
	}
	t.Setenv(alloc.ResourceLimitEnv, "150")
	usage(t, "INGOT_RESOURCE_LIMIT 150 is below this model's baseline", "--layers", "6")
}

func TestModelMustFitMemory(t *testing.T) {
	// 3.3 TB of experts: larger than any machine's memory.
	msg := usage(t, "the model needs ~", "--layers", "4096", "--hidden", "4096", "--experts", "512")
	require.Contains(t, msg, "exceeds this machine's memory limit")
	// The shape, against a 16 GiB machine: ~40 GB of expert weights.
	o, err := parseFlags([]string{"--hidden", "4096", "--experts", "512"}, &bytes.Buffer{})
	require.NoError(t, err)
	spec := runSpec{policy: o.cache}
	cfg, err := modelConfig(o, spec)
	require.NoError(t, err)
	est := estimateOf(t, o, spec, cfg, alloc.DefaultResourceLimit)
	require.Greater(t, est.Weights, int64(50*3*512*32*4096*4)) // the experts alone
	err = checkFits(est, 16<<30)
	require.ErrorIs(t, err, errUsage)
	require.Regexp(t, `^usage: the model needs ~\d+\.\d\d GB \(weights \d+\.\d\d GB, KV cache .*\), which exceeds this machine's memory limit of 17\.18 GB; use a smaller --hidden, --experts, --layers or --tokens$`, err.Error())
	require.NoError(t, checkFits(estimateOf(t, &options{mode: "batch", tokens: 12000, clearCacheEvery: 256}, spec, cfg, alloc.DefaultResourceLimit), est.Total()))
}

// TestWeightEstimate: the estimate is close to what the built model holds.
func TestWeightEstimate(t *testing.T) {
	for _, args := range [][]string{{}, {"--layers", "16", "--interval", "4"}, {"--hidden", "256", "--experts", "64", "--layers", "4"}, {"--attention-only", "--layers", "3"},
		{"--model-type", "qwen3_5", "--layers", "8", "--interval", "4"}, {"--model-type", "qwen3_next", "--layers", "8", "--interval", "4"},
		{"--config", "testdata/qwen3_next_tiny/config.json"}, {"--config", "testdata/qwen3_5_moe_tiny/config.json"}} {
		o, err := parseFlags(append(args, "--tokens", "8"), &bytes.Buffer{})
		require.NoError(t, err)
		spec := runSpec{policy: o.cache, attentionOnly: o.attentionOnly}
		cfg, err := modelConfig(o, spec)
		require.NoError(t, err)
		est := estimateOf(t, o, spec, cfg, alloc.DefaultResourceLimit)
		g, m, _, err := setup(o, spec, &bytes.Buffer{})
		require.NoError(t, err)
		got := g.Allocator().ActiveMemory()
		require.InEpsilon(t, float64(got), float64(est.Weights), 0.05, "%v: estimate %d, built %d", args, est.Weights, got)
		// Every parameter is one buffer; build adds a few constants of its own.
		live := g.Allocator().LiveBufferCount()
		require.LessOrEqual(t, est.Arrays, live, args)
		require.GreaterOrEqual(t, est.Arrays, live-4, args)
		_ = m
	}
}

func TestTokensBounded(t *testing.T) {
	usage(t, "--tokens must be in 8..100000000", "--tokens", "9223372036854775807")
	usage(t, "--report-every must be >= 1", "--report-every", "0")
}

// TestServerUnits: under churn the slope is per completed request and is labelled so;
// flags that do not apply there are refused.
func TestServerUnits(t *testing.T) {
	png := filepath.Join(t.TempDir(), "s.svg")
	args := []string{"--mode", "server", "--layers", "6", "--requests", "8", "--request-tokens", "40", "--concurrency", "3", "--plot", png}
	code, out, j := decode(t, args...)
	require.Equal(t, exitLeak, code, out)
	require.NotContains(t, j, "slope_per_token")
	require.Greater(t, j["slope_per_request"].(float64), 40.0, out)
	require.Equal(t, "completed_requests", j["sample_x"])
	b, err := os.ReadFile(png)
	require.NoError(t, err)
	require.Contains(t, string(b), ">completed requests<")
	require.Contains(t, string(b), "/request)")
	require.NotContains(t, string(b), "/token")
	for _, f := range [][]string{{"--census"}, {"--eval-cache-every", "10"}, {"--tokens", "100"}, {"--report-every", "10"}} {
		usage(t, f[0]+" does not apply to --mode server", append([]string{"--mode", "server"}, f...)...)
	}
	usage(t, "--requests does not apply to --mode batch", "--requests", "10")
	usage(t, "--requests 7 is too few for a verdict: the slope needs at least 8 samples", "--mode", "server", "--requests", "7")
}

// TestPlotFormats: the chart is SVG only; a .png (or any other) path is refused
// before anything runs, with the way out in the message.
func TestPlotFormats(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.svg")
	code, out, _ := decode(t, "--layers", "6", "--tokens", "80", "--report-every", "10", "--plot", p)
	require.Equal(t, exitLeak, code, out)
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(string(b), `<svg xmlns="http://www.w3.org/2000/svg" width="900" height="520"`), string(b[:80]))
	require.Contains(t, string(b), "predicted crash ~")
	usage(t, `--plot x.png: the chart is SVG only: use a path ending in .svg`, "--plot", filepath.Join(dir, "x.png"))
	usage(t, `--plot x.txt: the chart is SVG only: use a path ending in .svg`, "--plot", filepath.Join(dir, "x.txt"))
	_, err = os.Stat(filepath.Join(dir, "x.png"))
	require.ErrorIs(t, err, os.ErrNotExist, "a refused run writes nothing")
}

func TestOutputPathsCheckedFirst(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no", "such", "dir")
	for _, f := range []string{"--json-out", "--plot", "--cpuprofile"} {
		name := filepath.Join(missing, "out.svg")
		usage(t, f+" "+name+": ", f, name)
	}
	dir := t.TempDir()
	usage(t, "--json-out "+dir+": is a directory", "--json-out", dir)
	// A file that exists is left as it was when the run is refused.
	keep := filepath.Join(dir, "keep.json")
	require.NoError(t, os.WriteFile(keep, []byte("old"), 0o644))
	usage(t, "--fail-slope", "--json-out", keep, "--fail-slope", "NaN")
	b, err := os.ReadFile(keep)
	require.NoError(t, err)
	require.Equal(t, "old", string(b))
}

// TestLimitPrecedence: --limit, else INGOT_RESOURCE_LIMIT, else the device's, else the
// default; the verdict and prediction use the allocator's limit.
func TestLimitPrecedence(t *testing.T) {
	t.Setenv(alloc.ResourceLimitEnv, "3000")
	code, out, j := decode(t, "--layers", "6", "--tokens", "1000", "--report-every", "50")
	require.Equal(t, exitCrash, code, out)
	require.EqualValues(t, 3000, j["resource_limit"], out)
	require.Contains(t, out, "limit=3000 (INGOT_RESOURCE_LIMIT)")
	require.Contains(t, out, "Resource limit (3000) exceeded.")
	code, out, j = decode(t, "--layers", "6", "--tokens", "100", "--report-every", "50", "--limit", "9000")
	require.Equal(t, exitLeak, code, out)
	require.EqualValues(t, 9000, j["resource_limit"])
	require.Contains(t, out, "limit=9000 (--limit)")
	t.Setenv(alloc.ResourceLimitEnv, "lots")
	usage(t, `INGOT_RESOURCE_LIMIT="lots": want a positive integer`, "--layers", "6")
	os.Unsetenv(alloc.ResourceLimitEnv)
	code, out, j = decode(t, "--layers", "6", "--tokens", "16", "--device", "cpu")
	require.Equal(t, exitLeak, code, out)
	require.EqualValues(t, alloc.DefaultResourceLimit, j["resource_limit"])
	require.Contains(t, out, "limit=499000 (default)")
}

// TestClearCacheEvery: an eager decode's allocator cache keeps the retired KV blocks
// (ever larger) unless it is cleared; --clear-cache-every holds it down.
func TestClearCacheEvery(t *testing.T) {
	// 3,200 tokens: never cleared, the retired KV blocks (one per 256-token growth, each
	// larger) pile up to ~20 MB; cleared, the cache holds ~3 MB. (At 1,600 tokens the
	// block retired at token 1,536 landed before or after the clear at 1,536 depending on
	// the worker's timing: ~1.0-1.1 MB against ~2.1, at the bound.)
	lastCache := func(args ...string) float64 {
		code, out, j := decode(t, append([]string{"--layers", "4", "--cache", "eager", "--tokens", "3200", "--report-every", "200"}, args...)...)
		require.Equal(t, exitFlat, code, out)
		ss := j["samples"].([]any)
		return ss[len(ss)-1].([]any)[1].(map[string]any)["cache_mb"].(float64)
	}
	off := lastCache("--clear-cache-every", "0")
	on := lastCache("--clear-cache-every", "256")
	require.Greater(t, off, 0.0)
	require.Less(t, on, off/2, "off %.3f MB, on %.3f MB", off, on)
	usage(t, "--clear-cache-every must be >= 0", "--clear-cache-every", "-1")
}

func TestSlopeNeedsEnoughSamples(t *testing.T) {
	_, ok := slope([]predict.Sample{{Token: 1, Live: 1}, {Token: 2, Live: 2}})
	require.False(t, ok)
	s, ok := slope([]predict.Sample{{Token: 1}, {Token: 2}, {Token: 3, Live: 2}, {Token: 4, Live: 4}, {Token: 5, Live: 6}, {Token: 6, Live: 8}, {Token: 7, Live: 10}, {Token: 8}})
	require.True(t, ok)
	require.False(t, math.IsNaN(s))
	require.InDelta(t, 2.0, s, 1e-12)
	_ = strings.TrimSpace
}

// estimateOf is the run's estimate of cfg's random model.
func estimateOf(t *testing.T, o *options, spec runSpec, cfg models.Config, limit int) memEstimate {
	t.Helper()
	d, err := cfg.Describe()
	require.NoError(t, err)
	e, err := estimate(o, spec, d, limit)
	require.NoError(t, err)
	return e
}

// TestEstimateOverflowRefused: a config whose sizes overflow int64 (2^24 heads of
// dimension 2^20, hidden 2^14: each q_proj is 2^61 bytes) is refused with exit 64 by the
// run and by --predict-only; the estimate used to wrap to a small number that "fit",
// and the build then panicked (makeslice: len out of range).
func TestEstimateOverflowRefused(t *testing.T) {
	raw, err := os.ReadFile("testdata/qwen3_5_0.8b/config.json")
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	tc := m["text_config"].(map[string]any)
	tc["num_attention_heads"], tc["head_dim"], tc["hidden_size"] = 1<<24, 1<<20, 1<<14
	raw, err = json.Marshal(m)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "config.json")
	require.NoError(t, os.WriteFile(path, raw, 0o644))
	for _, extra := range []string{"--predict-only", "--tokens=16"} {
		msg := usage(t, "the model's size overflows a 64-bit count: model.layers.", "--config", path, extra)
		require.Contains(t, msg, "self_attn.q_proj.weight [35184372088832 16384]: model size overflows int64")
	}
}
