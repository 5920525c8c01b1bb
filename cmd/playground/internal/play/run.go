package play

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/ingotml/ingot/alloc"
	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/chart"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/predict"
	"github.com/ingotml/ingot/repro"
)

// RunSpec is what the page asks to run: the model, the runs one after another on one
// chart, and the limit.
type RunSpec struct {
	Model       ModelSpec `json:"model"`
	Runs        []string  `json:"runs"` // "lazy", "eager", "attention-only" (lazy, every layer attention)
	Tokens      int       `json:"tokens"`
	Limit       int       `json:"limit"`
	ReportEvery int       `json:"report_every"`
	Census      bool      `json:"census"`
}

// Update is one message to the page.
type Update struct {
	Type      string  `json:"type"` // "sample", "progress", "done" (one run), "end" (all), "error"
	Run       int     `json:"run"`  // index into RunSpec.Runs
	Label     string  `json:"label"`
	Tokens    int     `json:"tokens"`    // decoded so far
	Total     int     `json:"total"`     // RunSpec.Tokens
	TokPerSec float64 `json:"tok_per_s"` // so far
	Live      int     `json:"live"`      // live buffers (exact at a sample, approximate in between)
	Predicted int     `json:"predicted"` // this run's predicted crash token (0: none)
	Chart     string  `json:"chart,omitempty"`
	Hist      string  `json:"hist,omitempty"`
	Census    string  `json:"census,omitempty"` // the steepest growing site
	Log       string  `json:"log,omitempty"`    // lines for the log, as cmd/decode prints them
	// A finished run.
	Verdict     string  `json:"verdict,omitempty"`
	Slope       float64 `json:"slope"`
	Crashed     bool    `json:"crashed"`
	CrashToken  int     `json:"crash_token"`
	CrashError  string  `json:"crash_error,omitempty"` // exactly as MLX prints it
	Interrupted bool    `json:"interrupted"`
	Error       string  `json:"error,omitempty"`
}

// Labels of the runs, as cmd/decode --compare names them.
var labels = map[string]string{
	"lazy":           "lazy (stock mlx-lm bookkeeping)",
	"eager":          "eager (host-integer fix)",
	"attention-only": "attention-only (control)",
}

// maxTokens bounds a run's tokens, as cmd/decode bounds --tokens.
const maxTokens = 100_000_000

// memoryBudget is the most a run may need by predict.EstimateMemory (or less, the
// allocator's own memory limit): the engine runs in a browser tab's WebAssembly memory,
// a 32-bit address space that tabs rarely get more than a few GB of.
const memoryBudget = 1 << 30

// Env is what the host lends the engine.
type Env struct {
	Emit func(Update)
	// Yield is called between steps at most every YieldEvery: in a browser it hands
	// the thread back to the event loop, so that a Stop message is read.
	Yield      func()
	YieldEvery time.Duration
	// ProgressEvery spaces the progress updates (0: 100 ms).
	ProgressEvery time.Duration
}

// Run runs s's runs one after another, reporting through env, until the last one ends
// or ctx is cancelled (the run in progress then ends interrupted, and no other starts).
func Run(ctx context.Context, s RunSpec, env Env) error {
	if s.Tokens < predict.MinSamples || s.Tokens > maxTokens {
		return fmt.Errorf("tokens must be in %d..%d, not %d", predict.MinSamples, maxTokens, s.Tokens)
	}
	if s.Limit < 1 {
		return fmt.Errorf("the limit must be at least 1, not %d", s.Limit)
	}
	if s.Model.Config != "" && slices.Contains(s.Runs, "attention-only") {
		return errors.New("attention-only is the random model's control: clear the pasted config.json, or leave it out")
	}
	period := max(1, min(cmpOr(s.ReportEvery, 250), s.Tokens/predict.MinSamples))
	var series []chart.Series
	for i, name := range s.Runs {
		if ctx.Err() != nil {
			break
		}
		label, ok := labels[name]
		if !ok {
			return fmt.Errorf("unknown run %q (lazy, eager or attention-only)", name)
		}
		ms := s.Model
		policy := cache.Lazy
		switch name {
		case "eager":
			policy = cache.Eager
		case "attention-only":
			ms.AttentionOnly = true
		}
		r, err := runOne(ctx, s, ms, policy, label, i, period, series, env)
		if err != nil {
			return err
		}
		series = append(series, seriesOf(r))
	}
	env.Emit(Update{Type: "end"})
	return nil
}

func cmpOr(a, b int) int {
	if a != 0 {
		return a
	}
	return b
}

// runOne builds one run's model and decodes it.
func runOne(ctx context.Context, s RunSpec, ms ModelSpec, policy cache.Policy, label string, idx, period int, done []chart.Series, env Env) (*repro.Result, error) {
	cfg, err := ms.config()
	if err != nil {
		return nil, err
	}
	d, err := cfg.Describe()
	if err != nil {
		return nil, err
	}
	if ms.Config != "" {
		// A real config's width, shrunk as the CLI's --hidden 64 (and --experts 16) would.
		if cfg, err = cfg.Resize(64, min(d.Experts, 16)); err != nil {
			return nil, err
		}
		if d, err = cfg.Describe(); err != nil {
			return nil, err
		}
	}
	// What cmd/decode checks before it builds: the memory the run will hold, and a
	// limit the model can start under.
	est, err := predict.EstimateMemory(d, predict.MemoryRun{Rows: 1, Length: int64(8 + s.Tokens), Tokens: int64(s.Tokens),
		Lazy: policy == cache.Lazy, Limit: s.Limit})
	if err != nil {
		return nil, err
	}
	budget := min(int64(memoryBudget), alloc.New(graph.CPU().Provider(), alloc.Config{}).Stats().MemoryLimit)
	if err := est.Fits(budget, "use fewer layers, experts or tokens, or a smaller config"); err != nil {
		return nil, err
	}
	if err := predict.Describe(d, "batch", s.Limit).CheckBaseline("the limit"); err != nil {
		return nil, err
	}
	g, m, err := repro.Random(graph.CPU(), cfg, 0, s.Limit)
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		// Cancelled while the model was built: stop before the first step.
		r := repro.NewResult(g, m, "batch", policy)
		r.Label, r.Interrupted = label, true
		return r, nil
	}
	r := repro.NewResult(g, m, "batch", policy)
	r.Label = label
	// The census costs a third of the speed in a browser: only the lazy run, whose
	// growing site it names, takes it.
	census := s.Census && policy == cache.Lazy && r.Rate > 0
	var log bytes.Buffer
	source := "--limit"
	if s.Limit == alloc.DefaultResourceLimit {
		source = "default"
	}
	fmt.Fprintf(&log, "=== %s\n", label)
	predict.WriteRunModel(&log, d.ModelType, d, policy, "cpu", r.Limit, source)
	start := time.Now()
	lastYield, lastProgress := start, start
	progressEvery := env.ProgressEvery
	if progressEvery == 0 {
		progressEvery = 100 * time.Millisecond
	}
	base := func() Update {
		u := Update{Run: idx, Label: label, Tokens: len(r.Tokens), Total: s.Tokens, Predicted: r.PredictedCrash()}
		if el := time.Since(start).Seconds(); el > 0 {
			u.TokPerSec = float64(len(r.Tokens)) / el
		}
		return u
	}
	h := repro.Hooks{
		Start: func(*repro.Result) { start = time.Now() },
		Baseline: func(r *repro.Result) {
			r.WritePredict(&log)
		},
		Sample: func(r *repro.Result, sm predict.Sample, _ []graph.CensusSite) {
			sm.WriteLine(&log, false)
			u := base()
			u.Type, u.Live, u.Log = "sample", sm.Live, log.String()
			log.Reset()
			u.Chart = string(lines(s, append(slices.Clip(done), seriesOf(r))).SVG())
			u.Hist = string(hist(r).SVG())
			u.Census = growing(r, census)
			env.Emit(u)
		},
		Step: func(r *repro.Result, n int) {
			now := time.Now()
			if now.Sub(lastProgress) >= progressEvery {
				lastProgress = now
				u := base()
				u.Type, u.Live = "progress", g.Allocator().LiveBufferCount()
				env.Emit(u)
			}
			if env.Yield != nil && now.Sub(lastYield) >= env.YieldEvery {
				env.Yield()
				lastYield = time.Now()
			}
		},
	}
	err = repro.Decode(ctx, g, m, r, repro.Options{Tokens: s.Tokens, Period: period, ClearCacheEvery: 256, Census: census}, h)
	var be *repro.BaselineError
	if errors.As(err, &be) {
		return nil, &predict.BaselineError{Source: "the limit", Limit: s.Limit, Why: be.Why}
	}
	if err != nil {
		return nil, err
	}
	if r.Interrupted {
		fmt.Fprintf(&log, "[interrupted] stopped at token %s; the verdict below is for the run so far\n", predict.Comma(len(r.Tokens)))
	}
	r.WriteVerdict(&log, 0.5)
	r.WriteDrift(&log)
	fmt.Fprintf(&log, "[run] %s tokens in %.1f s (%.0f tok/s)\n", predict.Comma(len(r.Tokens)), r.Seconds, r.TokensPerSecond())
	u := base()
	u.Type, u.Log = "done", log.String()
	u.TokPerSec = r.TokensPerSecond()
	u.Verdict = string(r.Verdict(0.5))
	u.Slope, _ = predict.FitSlope(r.Samples)
	u.Crashed, u.CrashToken, u.Interrupted = r.Crashed, r.CrashToken, r.Interrupted
	if r.Crashed {
		var rle *alloc.ResourceLimitError // the allocator's own message, as MLX prints it
		if errors.As(r.CrashErr, &rle) {
			u.CrashError = rle.Error()
		}
	}
	if n := len(r.Samples); n > 0 {
		u.Live = r.Samples[n-1].Live
	}
	u.Chart = string(lines(s, append(slices.Clip(done), seriesOf(r))).SVG())
	u.Hist = string(hist(r).SVG())
	u.Census = growing(r, census)
	env.Emit(u)
	return r, nil
}

// lines is the chart of the runs so far.
func lines(s RunSpec, series []chart.Series) chart.Lines {
	c := chart.Lines{Title: "Live buffer objects vs tokens (ingot playground)", XName: "tokens", Limit: s.Limit, Series: series, MinX: s.Tokens}
	for _, sr := range series {
		if sr.Predicted > 0 && sr.Predicted < s.Tokens {
			c.MinX = 0 // the predicted crash, marked, sets the scale
		}
	}
	return c
}

// seriesOf is r's line, labelled as cmd/decode's chart labels it.
func seriesOf(r *repro.Result) chart.Series {
	// A run keeps its colour whatever runs before it: cmd/decode --compare's order.
	s := chart.Series{Label: r.Label, Predicted: r.PredictedCrash(), Color: chart.Colors[0]}
	switch {
	case r.Policy == cache.Eager:
		s.Color = chart.Colors[1]
	case r.GDN == 0:
		s.Color = chart.Colors[2]
	}
	for _, p := range r.Samples {
		s.Points = append(s.Points, chart.Point{X: p.Token, Y: p.Live})
	}
	if r.Crashed {
		s.Label += fmt.Sprintf(" (crashed at %s)", predict.Comma(r.CrashToken))
	} else if sl, ok := predict.FitSlope(r.Samples); ok {
		s.Label += fmt.Sprintf(" (%+.2f/token)", sl)
	}
	return s
}

// hist is the size-class histogram, first sample against the latest.
func hist(r *repro.Result) chart.Bars {
	b := chart.Bars{Title: "Live buffers by size class: " + r.Label, FirstName: "first sample", LastName: "latest sample"}
	for _, d := range r.Drift() {
		b.Labels = append(b.Labels, predict.SizeName(d.Bytes))
		b.First = append(b.First, d.First)
		b.Last = append(b.Last, d.Last)
	}
	return b
}

// growing is the census's steepest growing site, as cmd/decode prints it; without the
// census, a note saying why there is none.
func growing(r *repro.Result, census bool) string {
	switch {
	case !census && r.Rate > 0 && r.Policy == cache.Lazy:
		return "census off"
	case !census:
		return "no census: nothing is expected to grow"
	case r.Census == nil || len(r.Census.Growing) == 0:
		return "no site grows with tokens"
	}
	g := r.Census.Growing[0]
	return fmt.Sprintf("%s  %s  %+.2f nodes/token (%s live)", g.Site, g.Op, g.Slope, predict.Comma(g.Nodes))
}
