package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand"
	"runtime"
	"time"

	"github.com/ingotml/ingot/generate"
)

// serverRun is the churn variant: requests of a fixed length arrive at a steady pace
// (one every request-tokens/concurrency steps), so the generation batch never drains:
// rows finish and are filtered out, new ones are merged and extended in. Live buffers
// are sampled after every completed request.
func serverRun(ctx context.Context, o *options, spec runSpec, out io.Writer, prog *progress) (*result, error) {
	g, m, r, err := setup(o, spec, out)
	if err != nil {
		return nil, err
	}
	b := generate.NewBatchGenerator(m, spec.policy, o.concurrency)
	rng := rand.New(rand.NewSource(o.seed + 1))
	vocab := int32(m.VocabSize())
	newReq := func(id int) generate.Request {
		p := make([]int32, 1+id%o.promptLen) // prompt lengths differ: right-padded prefills
		for i := range p {
			p[i] = 1 + rng.Int31n(vocab-1)
		}
		return generate.Request{ID: id, Prompt: p, MaxTokens: o.reqTokens}
	}
	base, err := takeSample(g, 0, false)
	if err != nil {
		return nil, err
	}
	r.baseline = base.Live
	fmt.Fprintf(out, "[predict] churn: %d requests x %d tokens, %d at a time; every request stays below the per-completion threshold (%s tokens)\n",
		o.requests, o.reqTokens, o.concurrency, comma(r.stockCrash()))
	gap := max(o.reqTokens/o.concurrency, 1)
	inserted, completed, steps := 0, 0, 0
	prog.start(r)
	start := time.Now()
	for completed < o.requests {
		if ctx.Err() != nil {
			r.interrupted = true
			break
		}
		if inserted < o.requests && steps%gap == 0 && b.Active()+b.Pending() < o.concurrency {
			if err := b.Insert(newReq(inserted)); err != nil {
				return nil, err
			}
			inserted++
		}
		steps++
		toks, err := b.Next()
		if errors.Is(err, generate.ErrIdle) {
			continue
		}
		if r.crash(err) {
			if completed == 0 && len(r.tokens) == 0 {
				return nil, limit{n: r.limit, source: r.limitSource}.belowBaseline("the model and its first requests' prefill need more buffer objects than that")
			}
			break
		}
		if err != nil {
			return nil, err
		}
		if o.clearCacheEvery > 0 && steps%o.clearCacheEvery == 0 {
			g.Allocator().ClearCache()
		}
		for _, t := range toks {
			r.tokens = append(r.tokens, t.Token)
			if !t.Finished {
				continue
			}
			completed++
			s, err := takeSample(g, completed, len(r.samples) == 0 || completed == o.requests)
			if err != nil {
				return nil, err
			}
			r.addSample(g, s)
			prog.clear()
			fmt.Fprintf(out, "req %4d done (active %d) live=%d (+cached=%d = %d) active=%.1fMB rss=%.1fMB\n",
				completed, b.Active(), s.Live, s.CacheCount, s.Count, s.ActiveMB, s.RSSMB)
		}
		prog.update(len(r.tokens), g)
	}
	r.seconds = time.Since(start).Seconds()
	prog.clear()
	runtime.KeepAlive(b)
	runtime.KeepAlive(m)
	return r, nil
}

func printServerVerdict(out io.Writer, r *result, failSlope float64) {
	sl, _ := slope(r.samples)
	switch r.verdict(failSlope) {
	case "crashed":
		fmt.Fprintf(out, "[verdict] CRASH REPRODUCED under churn: %v after %s tokens\n", r.crashErr, comma(r.crashToken))
	case "none":
		fmt.Fprintf(out, "[verdict] NONE: %d completed requests; a slope needs at least %d\n", len(r.samples), minSamples)
	case "leaking":
		fmt.Fprintf(out, "[verdict] LEAKING across churn: %+.1f LIVE buffer objects per completed request (the batch never drained)\n", sl)
	default:
		fmt.Fprintf(out, "[verdict] FLAT across churn: %+.3f live buffer objects per completed request\n", sl)
	}
}
