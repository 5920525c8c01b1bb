package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"

	"github.com/ingotml/ingot/alloc"
	"github.com/ingotml/ingot/predict"
	"github.com/ingotml/ingot/repro"
)

// Exit codes, as the repro: 0 flat (or survived), 1 leak detected, 2 crash reproduced
// (predict.Verdict.ExitCode), and the command's own.
const (
	exitFlat      = predict.ExitFlat
	exitLeak      = predict.ExitLeak
	exitCrash     = predict.ExitCrash
	exitUsage     = 64                  // bad command line (sysexits EX_USAGE)
	exitNoDev     = 69                  // --device metal without a Metal device (EX_UNAVAILABLE)
	exitFailure   = predict.ExitFailure // anything else that went wrong (EX_SOFTWARE)
	exitInterrupt = 130                 // SIGINT or SIGTERM (128 + SIGINT, as a shell reports it)
)

// slope is the verdict's slope fit (predict.FitSlope).
func slope(ss []predict.Sample) (float64, bool) { return predict.FitSlope(ss) }

// printReport prints a finished run: verdict, size-class drift, census, host cost, speed.
func printReport(out io.Writer, r *result, failSlope float64) {
	r.WriteVerdict(out, failSlope)
	r.WriteDrift(out)
	printCensus(out, r)
	r.WriteHost(out)
	fmt.Fprintf(out, "[run] %s tokens in %.1f s (%.0f tok/s)", comma(len(r.Tokens)), r.Seconds, r.TokensPerSecond())
	if b := r.Batch; b.DecodeSteps > 0 { // server mode: how full its steps were
		fmt.Fprintf(out, "; %s decode steps of %.2f rows on average", comma(b.DecodeSteps), b.RowsPerStep())
	}
	fmt.Fprintln(out)
}

// jsonReport has the repro's keys plus ingot's (cache, device, crash_token,
// tokens_per_second, and more).
type jsonReport struct {
	Argv               []string            `json:"argv"`
	Mode               string              `json:"mode"`
	NSSM               int                 `json:"n_ssm"`
	Interval           int                 `json:"interval"`
	HaveCountProbe     bool                `json:"have_count_probe"`
	Crashed            bool                `json:"crashed"`
	SlopePerToken      *float64            `json:"slope_per_token,omitempty"`   // batch and plain modes
	SlopePerRequest    *float64            `json:"slope_per_request,omitempty"` // server mode
	SampleX            string              `json:"sample_x"`                    // what a sample's first element counts
	Verdict            predict.Verdict     `json:"verdict"`                     // crashed, leaking, flat or none
	Interrupted        bool                `json:"interrupted"`
	Leaking            bool                `json:"leaking"`
	ExpectedCrashToken *int                `json:"expected_crash_token"`
	Samples            [][2]any            `json:"samples"`
	HistFirst          [][2]int64          `json:"hist_first"`
	HistLast           [][2]int64          `json:"hist_last"`
	Seconds            float64             `json:"seconds"`
	Cache              string              `json:"cache"`
	Device             string              `json:"device"`
	CrashToken         *int                `json:"crash_token"`
	CrashError         string              `json:"crash_error,omitempty"`
	TokensPerSecond    float64             `json:"tokens_per_second"`
	DecodeSteps        int                 `json:"decode_steps,omitempty"`  // server mode
	DecodeRows         int                 `json:"decode_rows,omitempty"`   // server mode: the steps' rows, summed
	RowsPerStep        float64             `json:"rows_per_step,omitempty"` // server mode: the steps' mean batch
	Tokens             []int32             `json:"tokens"`
	Baseline           int                 `json:"baseline_live"`
	HostBytesPerLink   float64             `json:"host_bytes_per_link"`
	Limit              int                 `json:"resource_limit"`
	Census             *repro.CensusReport `json:"census,omitempty"`
	Runs               []jsonReport        `json:"runs,omitempty"`
	// With a text prompt (text.go): the generated text, the prompt's length in
	// tokens, and whether the end-of-sequence token stopped the run.
	Text         *string `json:"text,omitempty"`
	PromptTokens int     `json:"prompt_tokens,omitempty"`
	StoppedAtEOS bool    `json:"stopped_at_eos,omitempty"`
}

func hist(h []alloc.SizeClass) [][2]int64 {
	out := make([][2]int64, len(h))
	for i, c := range h {
		out[i] = [2]int64{c.Bytes, int64(c.Count)}
	}
	return out
}

func jsonOf(r *result, argv []string, failSlope float64) jsonReport {
	sl, _ := slope(r.Samples)
	sl = round(sl, 4)
	j := jsonReport{Argv: argv, Mode: r.Mode, NSSM: r.GDN, Interval: r.Interval, HaveCountProbe: true,
		Crashed: r.Crashed, Seconds: round(r.Seconds, 3), Verdict: r.Verdict(failSlope), Interrupted: r.Interrupted,
		Cache: r.Policy.String(), Device: r.Device, TokensPerSecond: round(r.TokensPerSecond(), 1),
		DecodeSteps: r.Batch.DecodeSteps, DecodeRows: r.Batch.DecodeRows, RowsPerStep: round(r.Batch.RowsPerStep(), 3),
		HistFirst: hist(r.HistFirst), HistLast: hist(r.HistLast), Tokens: r.Tokens,
		Baseline: r.Baseline, Limit: r.Limit, Census: r.Census, HostBytesPerLink: round(r.HostPerLink(), 1)}
	j.Leaking = j.Verdict == predict.Leaking
	if r.Unit() == "request" {
		j.SlopePerRequest, j.SampleX = &sl, "completed_requests"
	} else {
		j.SlopePerToken, j.SampleX = &sl, "tokens"
	}
	if p := r.PredictedCrash(); p > 0 {
		j.ExpectedCrashToken = &p
	}
	if r.Crashed {
		ct := r.CrashToken
		j.CrashToken = &ct
		j.CrashError = r.CrashErr.Error()
	}
	for _, s := range r.Samples {
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
	err = writeOut(path, func(w io.Writer) error {
		_, err := w.Write(append(b, '\n'))
		return err
	})
	if err != nil {
		return fmt.Errorf("--json-out %s: %w", path, err)
	}
	return nil
}
