package repro

import (
	"context"
	"errors"
	"math/rand"
	"runtime"
	"time"

	"github.com/ingotml/ingot/generate"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn"
)

// ChurnOptions are a continuous-batching run's requests.
type ChurnOptions struct {
	Requests      int   // requests to complete
	RequestTokens int   // tokens per request
	Concurrency   int   // requests decoding at once
	PromptLen     int   // longest prompt (lengths vary up to it)
	Seed          int64 // picks the prompts
	// Prompts, if set, are the requests' prompts, request i taking Prompts[i %
	// len(Prompts)] (PromptLen and Seed then pick nothing).
	Prompts         [][]int32
	ClearCacheEvery int // release the allocator's buffer cache every N steps (0: never)
}

// Churn is the server variant: requests of a fixed length arrive at a steady pace (one
// every RequestTokens/Concurrency steps), so the generation batch never drains: rows
// finish and are filtered out, new ones are merged and extended in. Live buffers are
// sampled after every completed request (a sample's Token is the completed count).
// Baseline is called once the baseline is sampled, before any request.
func Churn(ctx context.Context, g *graph.Graph, m nn.Model, r *Result, o ChurnOptions, h Hooks) error {
	b := generate.NewBatchGenerator(m, r.Policy, o.Concurrency)
	rng := rand.New(rand.NewSource(o.Seed + 1))
	vocab := int32(m.VocabSize())
	newReq := func(id int) generate.Request {
		if len(o.Prompts) > 0 {
			return generate.Request{ID: id, Prompt: o.Prompts[id%len(o.Prompts)], MaxTokens: o.RequestTokens}
		}
		p := make([]int32, 1+id%o.PromptLen) // prompt lengths differ: right-padded prefills
		for i := range p {
			p[i] = 1 + rng.Int31n(vocab-1)
		}
		return generate.Request{ID: id, Prompt: p, MaxTokens: o.RequestTokens}
	}
	base, err := TakeSample(g, 0, false)
	if err != nil {
		return err
	}
	r.Baseline = base.Live
	call(h.Baseline, r)
	gap := max(o.RequestTokens/o.Concurrency, 1)
	inserted, completed, steps := 0, 0, 0
	call(h.Start, r)
	start := time.Now()
	for completed < o.Requests {
		if ctx.Err() != nil {
			r.Interrupted = true
			break
		}
		if inserted < o.Requests && steps%gap == 0 && b.Active()+b.Pending() < o.Concurrency {
			if err := b.Insert(newReq(inserted)); err != nil {
				return err
			}
			inserted++
		}
		steps++
		toks, err := b.Next()
		if errors.Is(err, generate.ErrIdle) {
			continue
		}
		if r.Crash(err) {
			if completed == 0 && len(r.Tokens) == 0 {
				return &BaselineError{Why: "the model and its first requests' prefill need more buffer objects than that", Err: err}
			}
			break
		}
		if err != nil {
			return err
		}
		if o.ClearCacheEvery > 0 && steps%o.ClearCacheEvery == 0 {
			g.Allocator().ClearCache()
		}
		for _, t := range toks {
			r.Tokens = append(r.Tokens, t.Token)
			if h.Token != nil {
				h.Token(r, t)
			}
			if !t.Finished {
				continue
			}
			completed++
			s, err := TakeSample(g, completed, len(r.Samples) == 0 || completed == o.Requests)
			if err != nil {
				return err
			}
			r.addSample(g, s)
			if h.Request != nil {
				h.Request(r, s, b.Active())
			}
		}
		if h.Step != nil {
			h.Step(r, len(r.Tokens))
		}
	}
	r.Seconds = time.Since(start).Seconds()
	r.Batch = b.Stats()
	runtime.KeepAlive(b)
	runtime.KeepAlive(m)
	return nil
}
