package repro

import (
	"context"
	"runtime"
	"time"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/generate"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/predict"
)

// Options are one completion's decode.
type Options struct {
	Tokens          int  // tokens to decode
	Period          int  // sample every Period tokens (and at the last)
	EvalCacheEvery  int  // evaluate every cache array every N tokens (0: never)
	ClearCacheEvery int  // release the allocator's buffer cache every N tokens (0: never)
	Census          bool // record where pending nodes were created
	// Prompt is the completion's prompt (nil: the seed repro's ids 1..8).
	Prompt []int32
	// Stop, if set, ends the completion after a token for which it is true (an
	// end-of-sequence token); r.Stopped records it.
	Stop func(tok int32) bool
}

// Hooks let a caller watch a run. Each may be nil; all are called on the decoding
// goroutine, between steps.
type Hooks struct {
	// Start is called once the prompt is in, just before the first decode step.
	Start func(r *Result)
	// Baseline is called once r.Baseline is measured (after the first token).
	Baseline func(r *Result)
	// Sample is called after each sample with the census rows at it (nil without the
	// census, and for the extra sample taken at a crash or an interrupt).
	Sample func(r *Result, s predict.Sample, sites []graph.CensusSite)
	// Request is called under churn when a request completes, after its sample;
	// active is the rows still decoding.
	Request func(r *Result, s predict.Sample, active int)
	// Step is called after every decode step with the tokens decoded so far.
	Step func(r *Result, tokens int)
	// Token is called under churn for every token a request emits (its request ID,
	// and whether it is the request's last).
	Token func(r *Result, t generate.Token)
}

// prompt is the completion's prompt, as the seed repro's.
var prompt = []int32{1, 2, 3, 4, 5, 6, 7, 8}

// decoder abstracts the plain and batch paths for the loop.
type decoder interface {
	next() ([]int32, error) // tokens emitted this step (possibly none)
	caches() []cache.Cache
}

type plainDecoder struct{ p *generate.PlainGenerator }

func (d plainDecoder) next() ([]int32, error) {
	t, err := d.p.Next()
	if err != nil {
		return nil, err
	}
	return []int32{t}, nil
}
func (d plainDecoder) caches() []cache.Cache { return d.p.Caches() }

type batchDecoder struct{ b *generate.BatchGenerator }

func (d batchDecoder) next() ([]int32, error) {
	toks, err := d.b.Next()
	if err != nil {
		return nil, err
	}
	out := make([]int32, len(toks))
	for i, t := range toks {
		out[i] = t.Token
	}
	return out, nil
}
func (d batchDecoder) caches() []cache.Cache { return d.b.Caches() }

// Decode runs one completion of m (on g, whose result r NewResult made) on r.Mode's
// path, plain or batch, and samples it into r. It stops at the resource-limit crash
// (recorded in r, not an error), at the last token, or at the first step after ctx is
// done (r.Interrupted). A limit the model cannot even start under is a *BaselineError.
func Decode(ctx context.Context, g *graph.Graph, m nn.Model, r *Result, o Options, h Hooks) error {
	var d decoder
	prompt := prompt
	if o.Prompt != nil {
		prompt = o.Prompt
	}
	if r.Mode == "plain" {
		p, err := generate.NewPlain(m, r.Policy, prompt)
		if IsLimit(err) {
			return &BaselineError{Why: "the model and its prompt's prefill need more buffer objects than that", Err: err}
		}
		if err != nil {
			return err
		}
		d = plainDecoder{p}
	} else {
		b := generate.NewBatchGenerator(m, r.Policy, 0)
		// One more token than we decode: the batch is still live when we stop (not drained).
		if err := b.Insert(generate.Request{ID: 0, Prompt: prompt, MaxTokens: o.Tokens + 1}); err != nil {
			return err
		}
		d = batchDecoder{b}
	}
	var cen *census
	if o.Census {
		cen = startCensus(g)
	}
	call(h.Start, r)
	start := time.Now()
	next := o.Period
	for len(r.Tokens) < o.Tokens {
		if ctx.Err() != nil {
			r.Interrupted = true
			break
		}
		toks, err := d.next()
		if r.Crash(err) {
			if r.Baseline == 0 {
				// Nothing decoded yet: the model cannot start under this limit.
				return &BaselineError{Why: "the model and its first decoded token need more buffer objects than that", Err: err}
			}
			break
		}
		if err != nil {
			return err
		}
		if o.Stop != nil {
			for i, t := range toks {
				if o.Stop(t) {
					toks, r.Stopped = toks[:i+1], true
					break
				}
			}
		}
		r.Tokens = append(r.Tokens, toks...)
		n := len(r.Tokens)
		if n > 0 && n == len(toks) {
			// The baseline: live buffers once the prompt is in and decoding has begun,
			// less the links the first tokens already added.
			s, err := TakeSample(g, n, false)
			if err != nil {
				return err
			}
			r.Baseline = s.Live
			if r.Leaks() {
				r.Baseline -= r.Rate * n
			}
			call(h.Baseline, r)
		}
		if len(toks) > 0 {
			if o.EvalCacheEvery > 0 && n%o.EvalCacheEvery == 0 {
				if err := cache.EvalState(d.caches()); err != nil {
					return err
				}
			}
			if o.ClearCacheEvery > 0 && n%o.ClearCacheEvery == 0 {
				g.Allocator().ClearCache()
			}
		}
		if h.Step != nil {
			h.Step(r, n)
		}
		if r.Stopped {
			break // the last sample is taken below
		}
		if n >= next || n >= o.Tokens {
			next = n + o.Period
			s, err := TakeSample(g, n, len(r.Samples) == 0 || n >= o.Tokens)
			if err != nil {
				return err
			}
			r.addSample(g, s)
			var sites []graph.CensusSite
			if cen != nil {
				sites = cen.take(n)
				r.Census = cen.report()
			}
			if h.Sample != nil {
				h.Sample(r, s, sites)
			}
		}
	}
	r.Seconds = time.Since(start).Seconds()
	sampled := len(r.Samples) > 0 && r.Samples[len(r.Samples)-1].Token == len(r.Tokens)
	if r.Crashed || ((r.Interrupted || r.Stopped) && len(r.Tokens) > 0 && !sampled) {
		// A last sample at the crash (the chains are still live: the caches hold
		// them) or where the interrupt or the end-of-sequence token stopped the run.
		s, _ := TakeSample(g, len(r.Tokens), true) // after a crash: the recorded limit error again
		r.addSample(g, s)
		if h.Sample != nil {
			h.Sample(r, s, nil)
		}
	}
	if cen != nil {
		r.Census = cen.report()
	}
	// Go frees what the program no longer uses: keep the generator (and so the caches
	// and their chains) and the model alive through the last sample.
	runtime.KeepAlive(d)
	runtime.KeepAlive(m)
	return nil
}

func call(f func(*Result), r *Result) {
	if f != nil {
		f(r)
	}
}
