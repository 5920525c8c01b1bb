//go:build !js

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"
)

// The browser tests drive the page in headless Chromium (Debian's chromium; .ci/run
// installs it). Without it they skip, except under CI=true, where they fail.

var built struct {
	once         sync.Once
	site, decode string
	err          error
}

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Args = append(os.Args[:1], strings.Fields(os.Getenv(childEnv))...)
		main() // the command itself, for the signal tests (main_test.go)
	}
	code := m.Run()
	if built.site != "" {
		os.RemoveAll(filepath.Dir(built.site))
	}
	os.Exit(code)
}

// site builds the static site and the native CLI once per test binary.
func site(t *testing.T) (dir, decode string) {
	t.Helper()
	built.once.Do(func() {
		tmp, err := os.MkdirTemp("", "ingot-playground-test-")
		if err != nil {
			built.err = err
			return
		}
		built.site, built.decode = filepath.Join(tmp, "site"), filepath.Join(tmp, "decode")
		if built.err = buildSite(context.Background(), built.site); built.err != nil {
			return
		}
		if out, err := exec.Command("go", "build", "-o", built.decode, "github.com/ingotml/ingot/cmd/decode").CombinedOutput(); err != nil {
			built.err = fmt.Errorf("building cmd/decode: %w\n%s", err, out)
		}
	})
	require.NoError(t, built.err)
	return built.site, built.decode
}

// chromium finds the browser, or skips (fails under CI=true) without one.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("CI=true and no chromium on PATH: .ci/run installs Debian's chromium (apt-get install -y chromium)")
	}
	t.Skip("no chromium on PATH (apt-get install chromium): the browser tests need it")
	return ""
}

// page opens the site at path?query in a fresh headless Chromium and waits for the
// engine to be ready.
func page(t *testing.T, query string) context.Context {
	t.Helper()
	exe := chromium(t)
	dir, _ := site(t)
	srv := httptest.NewServer(handler(dir))
	t.Cleanup(srv.Close)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(exe), chromedp.Headless, chromedp.NoSandbox, chromedp.DisableGPU, chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1000, 1500))
	ctx, cancelC := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelC(); cancelA() })
	require.NoError(t, chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/?"+query)))
	wait(t, ctx, "window.ingotState.ready && window.ingotState.prediction !== null", 3*time.Minute)
	return ctx
}

// wait polls expr until it is true.
func wait(t *testing.T, ctx context.Context, expr string, limit time.Duration) {
	t.Helper()
	_, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingInterval(100*time.Millisecond), chromedp.WithPollingTimeout(limit)))
	require.NoError(t, err, "waiting for %s", expr)
}

func eval[T any](t *testing.T, ctx context.Context, expr string) T {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	require.NoError(t, err, expr)
	return v
}

// done is a finished run as the page saw it (play.Update's JSON).
type done struct {
	Label       string  `json:"label"`
	Tokens      int     `json:"tokens"`
	TokPerSec   float64 `json:"tok_per_s"`
	Verdict     string  `json:"verdict"`
	Slope       float64 `json:"slope"`
	Crashed     bool    `json:"crashed"`
	CrashToken  int     `json:"crash_token"`
	CrashError  string  `json:"crash_error"`
	Interrupted bool    `json:"interrupted"`
}

func finished(t *testing.T, ctx context.Context) []done {
	t.Helper()
	wait(t, ctx, "window.ingotState.ended", 6*time.Minute)
	require.Empty(t, eval[string](t, ctx, "window.ingotState.error"))
	b := eval[string](t, ctx, "JSON.stringify(window.ingotState.done)")
	var d []done
	require.NoError(t, json.Unmarshal([]byte(b), &d))
	return d
}

// cli runs the native command and returns its stdout and JSON report.
func cli(t *testing.T, args ...string) (string, map[string]any) {
	t.Helper()
	_, decode := site(t)
	js := filepath.Join(t.TempDir(), "run.json")
	args = append(args, "--device", "cpu")
	if args[0] != "--predict-only" { // which writes no report
		args = append(args, "--json-out", js)
	}
	out, _ := exec.Command(decode, args...).Output()
	var j map[string]any
	if b, err := os.ReadFile(js); err == nil {
		require.NoError(t, json.Unmarshal(b, &j))
	}
	return string(out), j
}

// predictLines is --predict-only's output without the [memory] line (the page cannot
// know the machine's memory).
func predictLines(t *testing.T, args ...string) string {
	t.Helper()
	out, _ := cli(t, append([]string{"--predict-only"}, args...)...)
	var keep []string
	for _, l := range strings.SplitAfter(out, "\n") {
		if l != "" && !strings.HasPrefix(l, "[memory]") {
			keep = append(keep, l)
		}
	}
	require.Len(t, keep, 3, out)
	return strings.Join(keep, "")
}

// TestOpensOnTheDefaultPrediction: before anything runs, the page shows the default
// model's prediction exactly as --predict-only prints it (crash near token 10,370).
func TestOpensOnTheDefaultPrediction(t *testing.T) {
	ctx := page(t, "")
	got := eval[string](t, ctx, "document.getElementById('predict-out').textContent")
	require.Equal(t, predictLines(t), got)
	require.Contains(t, got, "crash near token ~10,370")
}

// TestPastedConfigPredictsAsTheCLI: pasting Qwen3.5-0.8B's config.json gives
// --predict-only --config's lines.
func TestPastedConfigPredictsAsTheCLI(t *testing.T) {
	ctx := page(t, "")
	path := filepath.Join("..", "decode", "testdata", "qwen3_5_0.8b", "config.json")
	cfg, err := os.ReadFile(path)
	require.NoError(t, err)
	js, _ := json.Marshal(string(cfg))
	eval[bool](t, ctx, fmt.Sprintf(`(() => { const c = document.getElementById('config'); c.value = %s;
		c.dispatchEvent(new Event('input')); return true })()`, js))
	wait(t, ctx, "window.ingotState.prediction.model_type === 'qwen3_5_text'", 2*time.Minute)
	got := eval[string](t, ctx, "document.getElementById('predict-out').textContent")
	require.Equal(t, predictLines(t, "--config", path), got)
	require.Contains(t, got, "crash near token ~29,326")
	require.Contains(t, eval[string](t, ctx, "document.getElementById('structure').textContent"), "24 layers (18 GDN, 6 attention)")
	// Clear, then drop the file on the box instead: the same prediction.
	eval[bool](t, ctx, "(() => { document.getElementById('clear-config').click(); return true })()")
	wait(t, ctx, "window.ingotState.prediction.model_type === 'qwen3_5_moe'", 2*time.Minute)
	eval[bool](t, ctx, fmt.Sprintf(`(() => { const dt = new DataTransfer();
		dt.items.add(new File([%s], 'config.json', {type: 'application/json'}));
		document.getElementById('config').dispatchEvent(new DragEvent('drop', {dataTransfer: dt, bubbles: true, cancelable: true}));
		return true })()`, js))
	wait(t, ctx, "window.ingotState.prediction.model_type === 'qwen3_5_text'", 2*time.Minute)
	require.Equal(t, got, eval[string](t, ctx, "document.getElementById('predict-out').textContent"))
}

// TestExampleConfigPreset: ?config=NAME loads cmd/decode's example config, and the
// prediction is --predict-only --config's (Qwen3-Next-80B: slope 35, token 14,227).
func TestExampleConfigPreset(t *testing.T) {
	ctx := page(t, "config=qwen3_next_80b")
	wait(t, ctx, "window.ingotState.prediction.model_type === 'qwen3_next'", 2*time.Minute)
	got := eval[string](t, ctx, "document.getElementById('predict-out').textContent")
	require.Equal(t, predictLines(t, "--config", filepath.Join("..", "decode", "testdata", "qwen3_next_80b", "config.json")), got)
	require.Contains(t, got, "crash near token ~14,227")
	require.Equal(t, "qwen3_next_80b", eval[string](t, ctx, "document.getElementById('example').value"))
}

// TestLazyCrashesWhereTheCLIDoes: a 12-layer lazy run at a lowered limit crashes at the
// native command's token with MLX's message; the page reports both speeds.
func TestLazyCrashesWhereTheCLIDoes(t *testing.T) {
	ctx := page(t, "layers=12&limit=12000&tokens=100000&runs=lazy&census=0&run=1")
	d := finished(t, ctx)
	require.Len(t, d, 1)
	_, j := cli(t, "--layers", "12", "--limit", "12000", "--tokens", "100000")
	require.True(t, d[0].Crashed)
	require.EqualValues(t, j["crash_token"], d[0].CrashToken)
	require.Equal(t, "[metal::malloc] Resource limit (12000) exceeded.", d[0].CrashError)
	require.Equal(t, j["crash_error"], d[0].CrashError)
	require.Contains(t, eval[string](t, ctx, "document.getElementById('crash').textContent"), "[metal::malloc] Resource limit (12000) exceeded.")
	native := j["tokens_per_second"].(float64)
	t.Logf("12 layers, lazy, --limit 12000: crash at token %d in both; headless Chromium %.0f tok/s, native %.0f tok/s (%.2fx)",
		d[0].CrashToken, d[0].TokPerSec, native, native/d[0].TokPerSec)
}

// TestEagerIsFlat: the fix at the same limit never crashes and stays flat.
func TestEagerIsFlat(t *testing.T) {
	ctx := page(t, "layers=12&limit=12000&tokens=1500&runs=eager&census=0&run=1")
	d := finished(t, ctx)
	require.Len(t, d, 1)
	require.False(t, d[0].Crashed)
	require.Equal(t, 1500, d[0].Tokens)
	require.Equal(t, "flat", d[0].Verdict)
	require.InDelta(t, 0, d[0].Slope, 0.01)
}

// TestSideBySide: lazy and eager in two workers at once, each on its own chart: the
// lazy run crashes at the native CLI's token, eager stays flat.
func TestSideBySide(t *testing.T) {
	ctx := page(t, "layers=12&limit=12000&tokens=1500&runs=lazy,eager&census=0&sbs=1&run=1")
	d := finished(t, ctx)
	require.Len(t, d, 2)
	by := map[string]done{}
	for _, r := range d {
		by[r.Label] = r
	}
	_, j := cli(t, "--layers", "12", "--limit", "12000", "--tokens", "1500")
	lazy, eager := by["lazy (stock mlx-lm bookkeeping)"], by["eager (host-integer fix)"]
	require.True(t, lazy.Crashed)
	require.EqualValues(t, j["crash_token"], lazy.CrashToken)
	require.False(t, eager.Crashed)
	require.Equal(t, "flat", eager.Verdict)
	require.Equal(t, 2.0, eval[float64](t, ctx, "document.querySelectorAll('#chart > div > svg').length"), "one chart per run")
	t.Logf("side by side: lazy %.0f tok/s, eager %.0f tok/s", lazy.TokPerSec, eager.TokPerSec)
}

// TestStopInterrupts: Stop mid-run ends it interrupted, and the next run never starts.
func TestStopInterrupts(t *testing.T) {
	ctx := page(t, "layers=50&limit=499000&tokens=100000&runs=lazy,eager&run=1")
	wait(t, ctx, "document.getElementById('status').textContent.includes(' tok/s')", 3*time.Minute)
	eval[bool](t, ctx, "(() => { document.getElementById('stop').click(); return true })()")
	d := finished(t, ctx)
	require.Len(t, d, 1, "the eager run never started")
	require.True(t, d[0].Interrupted)
	require.Greater(t, d[0].Tokens, 0)
	require.Less(t, d[0].Tokens, 100000)
	require.Contains(t, eval[string](t, ctx, "document.getElementById('status').textContent"), "interrupted at token")
	require.Contains(t, eval[string](t, ctx, "document.getElementById('log').textContent"), "[interrupted] stopped at token ")
}

// TestScreenshot runs the default comparison (lazy, eager, attention-only at the
// page's default limit) and saves a screenshot: $INGOT_ARTIFACTS/playground.png, or
// the test's temporary folder.
func TestScreenshot(t *testing.T) {
	ctx := page(t, "run=1")
	d := finished(t, ctx)
	for _, r := range d {
		t.Logf("%s: %d tokens at %.0f tok/s (%s)", r.Label, r.Tokens, r.TokPerSec, r.Verdict)
	}
	require.Len(t, d, 3)
	require.True(t, d[0].Crashed)
	require.Equal(t, "flat", d[1].Verdict)
	require.Equal(t, "flat", d[2].Verdict)
	require.Contains(t, eval[string](t, ctx, "document.getElementById('census-site').textContent"), "lazy (stock mlx-lm bookkeeping): cache/lazy.go:")
	// The lazy run's histogram: its 4-byte class is the one that grew.
	eval[bool](t, ctx, "(() => { document.querySelector('#hist-tabs button').click(); return true })()")
	require.Contains(t, eval[string](t, ctx, "document.getElementById('hist').textContent"), "size class: lazy")
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	dir := os.Getenv("INGOT_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	require.NoError(t, os.MkdirAll(dir, 0o755))
	path := filepath.Join(dir, "playground.png")
	require.NoError(t, os.WriteFile(path, png, 0o644))
	t.Logf("screenshot: %s", path)
}
