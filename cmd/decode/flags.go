package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/ingotml/ingot/cache"
)

// options are the command's flags: the seed repro's (repro_leak.py) with the same
// defaults, plus ingot's own.
type options struct {
	mode           string
	attentionOnly  bool
	layers         int
	interval       int
	experts        int
	hidden         int
	tokens         int
	reportEvery    int
	ops            bool
	evalCacheEvery int
	failSlope      float64
	jsonOut        string
	disableCompile bool

	cache   cache.Policy
	limit   int
	device  string
	plot    string
	compare bool
	census  bool
	seed    int64

	cpuProfile string

	requests    int
	reqTokens   int
	concurrency int
	promptLen   int
}

// errUsage marks a bad command line (exit 64).
var errUsage = errors.New("usage")

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("decode", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.mode, "mode", "batch", "batch (mlx-lm BatchGenerator, the server path), plain (generate_step), or server (continuous-batching churn)")
	fs.BoolVar(&o.attentionOnly, "attention-only", false, "every layer full attention (no GDN layers): the control")
	fs.IntVar(&o.layers, "layers", 50, "number of layers")
	fs.IntVar(&o.interval, "interval", 0, "full_attention_interval (0: = layers, one attention layer last)")
	fs.IntVar(&o.experts, "experts", 8, "MoE experts (top-2)")
	fs.IntVar(&o.hidden, "hidden", 64, "hidden size")
	fs.IntVar(&o.tokens, "tokens", 12000, "tokens to decode")
	fs.IntVar(&o.reportEvery, "report-every", 250, "sample and print every N tokens")
	fs.BoolVar(&o.ops, "ops", false, "gated-delta recurrence as a composition of ops instead of the kernel")
	fs.IntVar(&o.evalCacheEvery, "eval-cache-every", 0, "evaluate every cache array every N tokens (0: never); pins the mechanism")
	fs.Float64Var(&o.failSlope, "fail-slope", 0.5, "live objects/token above which the run counts as leaking")
	fs.StringVar(&o.jsonOut, "json-out", "", "write the run's figures as JSON to this path")
	fs.BoolVar(&o.disableCompile, "disable-compile", false, "accepted for compatibility: ingot has no mx.compile, so there is nothing to disable")
	policy := fs.String("cache", "lazy", "cache bookkeeping: lazy (mlx-lm, leaks) or eager (host integers, the fix)")
	fs.IntVar(&o.limit, "limit", 499000, "resource limit (buffer objects)")
	fs.StringVar(&o.device, "device", "auto", "cpu, metal, or auto (Metal when available)")
	fs.StringVar(&o.plot, "plot", "", "write an SVG chart of live buffers vs token to this path")
	fs.BoolVar(&o.compare, "compare", false, "run lazy, eager and attention-only one after another (one chart with --plot)")
	fs.BoolVar(&o.census, "census", false, "record where unevaluated nodes were created and report the growing sites")
	fs.Int64Var(&o.seed, "seed", 0, "random-weight seed")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a Go CPU profile of the run to this path")
	fs.IntVar(&o.requests, "requests", 48, "server mode: requests to complete")
	fs.IntVar(&o.reqTokens, "request-tokens", 200, "server mode: tokens per request")
	fs.IntVar(&o.concurrency, "concurrency", 4, "server mode: requests decoding at once")
	fs.IntVar(&o.promptLen, "prompt-len", 8, "server mode: longest prompt (prompts vary in length up to it)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("%w: unexpected arguments %q", errUsage, strings.Join(fs.Args(), " "))
	}
	p, err := cache.ParsePolicy(*policy)
	if err != nil {
		return nil, fmt.Errorf("%w: --cache: %v", errUsage, err)
	}
	o.cache = p
	return o, o.validate()
}

func (o *options) validate() error {
	bad := func(f string, args ...any) error { return fmt.Errorf("%w: "+f, append([]any{errUsage}, args...)...) }
	switch o.mode {
	case "batch", "plain", "server":
	default:
		return bad("--mode must be batch, plain or server, not %q", o.mode)
	}
	switch o.device {
	case "cpu", "metal", "auto":
	default:
		return bad("--device must be cpu, metal or auto, not %q", o.device)
	}
	switch {
	case o.layers < 1 || o.layers > 4096:
		return bad("--layers must be in 1..4096, not %d", o.layers)
	case o.interval < 0:
		return bad("--interval must be >= 0, not %d", o.interval)
	case o.experts < 2 || o.experts > 512:
		return bad("--experts must be in 2..512 (top-2 routing), not %d", o.experts)
	case o.hidden < 16 || o.hidden > 4096 || o.hidden%16 != 0:
		return bad("--hidden must be a multiple of 16 in 16..4096, not %d", o.hidden)
	case o.tokens < 1:
		return bad("--tokens must be >= 1, not %d", o.tokens)
	case o.reportEvery < 1:
		return bad("--report-every must be >= 1, not %d", o.reportEvery)
	case o.evalCacheEvery < 0:
		return bad("--eval-cache-every must be >= 0, not %d", o.evalCacheEvery)
	case o.limit < 1:
		return bad("--limit must be >= 1, not %d", o.limit)
	case o.requests < 1 || o.reqTokens < 1 || o.concurrency < 1 || o.promptLen < 1:
		return bad("--requests, --request-tokens, --concurrency and --prompt-len must be >= 1")
	}
	return nil
}
