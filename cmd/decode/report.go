package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"os"

	"github.com/ingotml/ingot/alloc"
)

// slope is the least-squares slope of live buffers per sample step (token, or completed
// request in server mode) over the repro's window, samples[len/4 : len-1] (skip
// warm-up and the final sample). ok is false when there are fewer than minSamples
// samples: such a slope is no verdict.
func slope(ss []sample) (sl float64, ok bool) {
	w := ss
	if len(ss) >= 4 {
		w = ss[len(ss)/4 : len(ss)-1]
	}
	ok = len(ss) >= minSamples
	if len(w) < 2 {
		return 0, ok
	}
	var sx, sy, sxx, sxy float64
	for _, s := range w {
		x, y := float64(s.Token), float64(s.Live)
		sx += x
		sy += y
		sxx += x * x
		sxy += x * y
	}
	n := float64(len(w))
	den := n*sxx - sx*sx
	if den == 0 {
		return 0, ok
	}
	return (n*sxy - sx*sy) / den, ok
}

// Exit codes, as the repro: 0 flat (or survived), 1 leak detected, 2 crash reproduced.
const (
	exitFlat      = 0
	exitLeak      = 1
	exitCrash     = 2
	exitUsage     = 64  // bad command line (sysexits EX_USAGE)
	exitNoDev     = 69  // --device metal without a Metal device (EX_UNAVAILABLE)
	exitFailure   = 70  // anything else that went wrong (EX_SOFTWARE)
	exitInterrupt = 130 // SIGINT or SIGTERM (128 + SIGINT, as a shell reports it)
)

// verdict is the run's outcome: crashed, leaking, flat, or none (too few samples).
func (r *result) verdict(failSlope float64) string {
	sl, ok := slope(r.samples)
	switch {
	case r.crashed:
		return "crashed"
	case !ok:
		return "none"
	case sl > failSlope:
		return "leaking"
	}
	return "flat"
}

func (r *result) exitCode(failSlope float64) int {
	switch r.verdict(failSlope) {
	case "crashed":
		return exitCrash
	case "leaking":
		return exitLeak
	case "flat":
		return exitFlat
	}
	return exitFailure
}

// unit is what the slope is per: a token, or under churn a completed request.
func (r *result) unit() string {
	if r.mode == "server" {
		return "request"
	}
	return "token"
}

func printVerdict(out io.Writer, r *result, failSlope float64) {
	if r.mode == "server" {
		printServerVerdict(out, r, failSlope)
		return
	}
	sl, ok := slope(r.samples)
	switch r.verdict(failSlope) {
	case "crashed":
		before := fmt.Sprintf("%+.1f live objects/token before it", sl)
		if !ok {
			before = fmt.Sprintf("too few samples before it for a slope: %d of %d", len(r.samples), minSamples)
		}
		fmt.Fprintf(out, "[verdict] CRASH REPRODUCED: %v at token %s (predicted ~%s; %s)\n",
			r.crashErr, comma(r.crashToken), comma(r.predictedCrash()), before)
	case "none":
		fmt.Fprintf(out, "[verdict] NONE: %d samples over %s tokens; a slope needs at least %d\n",
			len(r.samples), comma(len(r.tokens)), minSamples)
	case "leaking":
		last := r.samples[len(r.samples)-1]
		eta := last.Token + int(float64(r.limit-last.Count)/sl)
		fmt.Fprintf(out, "[verdict] LEAKING: %+.1f LIVE buffer objects/token (bytes flat: %.1fMB active); resource-limit crash near token ~%s\n",
			sl, last.ActiveMB, comma(eta))
	default:
		fmt.Fprintf(out, "[verdict] FLAT: %+.3f live buffer objects/token over %d tokens\n", sl, len(r.tokens))
	}
}

// printDrift prints live buffers per power-of-two size class, first sample vs last.
func printDrift(out io.Writer, r *result) {
	fmt.Fprintf(out, "[sizes] live buffers by size class (first sample -> last sample)\n")
	classes := map[int64][2]int{}
	var order []int64
	add := func(h []alloc.SizeClass, i int) {
		for _, c := range h {
			v, ok := classes[c.Bytes]
			if !ok {
				order = append(order, c.Bytes)
			}
			v[i] = c.Count
			classes[c.Bytes] = v
		}
	}
	add(r.histFirst, 0)
	add(r.histLast, 1)
	sortInt64(order)
	for _, b := range order {
		v := classes[b]
		mark := ""
		if v[1]-v[0] != 0 {
			mark = "  <- drift"
		}
		fmt.Fprintf(out, "  %10s %9d -> %9d  %+9d%s\n", sizeName(b), v[0], v[1], v[1]-v[0], mark)
	}
}

func sortInt64(v []int64) {
	for i := 1; i < len(v); i++ {
		for j := i; j > 0 && v[j] < v[j-1]; j-- {
			v[j], v[j-1] = v[j-1], v[j]
		}
	}
}

func sizeName(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%d GiB", b>>30)
	case b >= 1<<20:
		return fmt.Sprintf("%d MiB", b>>20)
	case b >= 1<<10:
		return fmt.Sprintf("%d KiB", b>>10)
	}
	return fmt.Sprintf("%d B", b)
}

// hostPerLink is the Go heap added per live buffer gained between the first and last
// sample: the host-side cost of one dead link (0 when nothing grew).
func hostPerLink(r *result) float64 {
	if len(r.samples) < 2 {
		return 0
	}
	a, b := r.samples[0], r.samples[len(r.samples)-1]
	if b.Live-a.Live < 100 {
		return 0
	}
	return (b.HeapMB - a.HeapMB) * (1 << 20) / float64(b.Live-a.Live)
}

func printRun(out io.Writer, r *result) {
	if per := hostPerLink(r); per > 0 {
		a, b := r.samples[0], r.samples[len(r.samples)-1]
		fmt.Fprintf(out, "[host] Go heap %.1fMB -> %.1fMB for %s more live buffers: ~%.0f bytes of graph per dead link (MLX: ~2.7 KB)\n",
			a.HeapMB, b.HeapMB, comma(b.Live-a.Live), per)
	}
	fmt.Fprintf(out, "[run] %s tokens in %.1f s (%.0f tok/s)\n", comma(len(r.tokens)), r.seconds, r.tokensPerSecond())
}

// jsonReport has the repro's keys plus ingot's (cache, device, crash_token,
// tokens_per_second, and more).
type jsonReport struct {
	Argv               []string      `json:"argv"`
	Mode               string        `json:"mode"`
	NSSM               int           `json:"n_ssm"`
	Interval           int           `json:"interval"`
	HaveCountProbe     bool          `json:"have_count_probe"`
	Crashed            bool          `json:"crashed"`
	SlopePerToken      *float64      `json:"slope_per_token,omitempty"`   // batch and plain modes
	SlopePerRequest    *float64      `json:"slope_per_request,omitempty"` // server mode
	SampleX            string        `json:"sample_x"`                    // what a sample's first element counts
	Verdict            string        `json:"verdict"`                     // crashed, leaking, flat or none
	Interrupted        bool          `json:"interrupted"`
	Leaking            bool          `json:"leaking"`
	ExpectedCrashToken *int          `json:"expected_crash_token"`
	Samples            [][2]any      `json:"samples"`
	HistFirst          [][2]int64    `json:"hist_first"`
	HistLast           [][2]int64    `json:"hist_last"`
	Seconds            float64       `json:"seconds"`
	Cache              string        `json:"cache"`
	Device             string        `json:"device"`
	CrashToken         *int          `json:"crash_token"`
	CrashError         string        `json:"crash_error,omitempty"`
	TokensPerSecond    float64       `json:"tokens_per_second"`
	Tokens             []int32       `json:"tokens"`
	Baseline           int           `json:"baseline_live"`
	HostBytesPerLink   float64       `json:"host_bytes_per_link"`
	Limit              int           `json:"resource_limit"`
	Census             *censusReport `json:"census,omitempty"`
	Runs               []jsonReport  `json:"runs,omitempty"`
}

func hist(h []alloc.SizeClass) [][2]int64 {
	out := make([][2]int64, len(h))
	for i, c := range h {
		out[i] = [2]int64{c.Bytes, int64(c.Count)}
	}
	return out
}

func (r *result) json(argv []string, failSlope float64) jsonReport {
	sl, _ := slope(r.samples)
	sl = round(sl, 4)
	j := jsonReport{Argv: argv, Mode: r.mode, NSSM: r.nSSM, Interval: r.interval, HaveCountProbe: true,
		Crashed: r.crashed, Seconds: round(r.seconds, 3), Verdict: r.verdict(failSlope), Interrupted: r.interrupted,
		Cache: r.policy.String(), Device: r.device, TokensPerSecond: round(r.tokensPerSecond(), 1),
		HistFirst: hist(r.histFirst), HistLast: hist(r.histLast), Tokens: r.tokens,
		Baseline: r.baseline, Limit: r.limit, Census: r.census, HostBytesPerLink: round(hostPerLink(r), 1)}
	j.Leaking = j.Verdict == "leaking"
	if r.unit() == "request" {
		j.SlopePerRequest, j.SampleX = &sl, "completed_requests"
	} else {
		j.SlopePerToken, j.SampleX = &sl, "tokens"
	}
	if p := r.predictedCrash(); p > 0 {
		j.ExpectedCrashToken = &p
	}
	if r.crashed {
		ct := r.crashToken
		j.CrashToken = &ct
		j.CrashError = r.crashErr.Error()
	}
	for _, s := range r.samples {
		j.Samples = append(j.Samples, [2]any{s.Token, s})
	}
	return j
}

func round(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", " ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("--json-out: %w", err)
	}
	return nil
}
