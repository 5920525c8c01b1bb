package main

import (
	"context"
	"fmt"
	"io"

	"github.com/ingotml/ingot/predict"
	"github.com/ingotml/ingot/repro"
)

// serverRun is the churn variant (repro.Churn): live buffers are sampled after every
// completed request.
func serverRun(ctx context.Context, o *options, spec runSpec, out io.Writer, prog *progress) (*result, error) {
	g, m, r, err := setup(o, spec, out)
	if err != nil {
		return nil, err
	}
	h := hooks(out, prog, g)
	h.Baseline = func(r *result) {
		fmt.Fprintf(out, "[predict] churn: %d requests x %d tokens, %d at a time; every request stays below the per-completion threshold (%s tokens)\n",
			o.requests, o.reqTokens, o.concurrency, comma(r.StockCrash()))
	}
	h.Request = func(r *result, s predict.Sample, active int) {
		prog.clear()
		fmt.Fprintf(out, "req %4d done (active %d) live=%d (+cached=%d = %d) active=%.1fMB rss=%.1fMB\n",
			s.Token, active, s.Live, s.CacheCount, s.Count, s.ActiveMB, s.RSSMB)
	}
	opts := repro.ChurnOptions{Requests: o.requests, RequestTokens: o.reqTokens, Concurrency: o.concurrency,
		PromptLen: o.promptLen, Seed: o.seed, ClearCacheEvery: o.clearCacheEvery}
	o.text.run.applyChurn(&opts, &h) // --prompts-file: its prompts, each request's text printed
	err = repro.Churn(ctx, g, m, r, opts, h)
	prog.clear()
	if err != nil {
		return nil, baselineErr(err, r)
	}
	return r, nil
}
