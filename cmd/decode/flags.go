package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/ingotml/ingot/alloc"
	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/models"
	"github.com/ingotml/ingot/predict"
)

const (
	// minSamples is the fewest samples a slope verdict is drawn from.
	minSamples = predict.MinSamples
	// maxTokens bounds --tokens and --requests x --request-tokens (a week at the
	// default model's speed; well inside int arithmetic).
	maxTokens = 100_000_000
)

// options are the command's flags: the seed repro's (repro_leak.py) with the same
// defaults, plus ingot's own.
type options struct {
	mode           string
	modelType      string // the repro model's model_type (without --config)
	configPath     string // --config: a real model's config.json (layer structure)
	modelDir       string // --model: a checkpoint directory to load
	predictOnly    bool   // --predict-only: read config and headers, print the prediction
	deviceNoted    bool   // the [device] line about a refused Metal device was printed (once a run)
	metalRefused   bool   // Metal's kernels failed to compile (GPU.Ready): auto stays on the CPU
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
	failSlopeText  string // as given, for the error message
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

	clearCacheEvery int
	fastPrompts     bool            // --fast-prompts: graph.Options.FastPrompts
	set             map[string]bool // flags given on the command line

	requests    int
	reqTokens   int
	concurrency int
	promptLen   int

	text textFlags // --prompt and the other text flags (text.go)
}

// errUsage marks a bad command line (exit 64).
var errUsage = errors.New("usage")

func parseFlags(args []string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("decode", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.mode, "mode", "batch", "batch (mlx-lm BatchGenerator, the server path), plain (generate_step), or server (continuous-batching churn)")
	fs.StringVar(&o.modelType, "model-type", models.DefaultType, "random repro model, one of "+strings.Join(models.Types(), ", ")+
		" (qwen3_5_moe: every MLP sparse; qwen3_5: dense MLPs; qwen3_next: fused GDN projections; qwen3: every layer attention, the control)")
	fs.StringVar(&o.configPath, "config", "", "build the random model with the layer structure of this config.json (HF or mlx-community; --hidden and --experts may shrink it)")
	fs.StringVar(&o.modelDir, "model", "", "load this checkpoint directory (HF or mlx-community, float or quantized) instead of a random model")
	fs.BoolVar(&o.predictOnly, "predict-only", false, "read only config.json and the safetensors headers, print the predicted slope and crash token, and exit")
	fs.BoolVar(&o.attentionOnly, "attention-only", false, "every layer full attention (no GDN layers): the control")
	fs.IntVar(&o.layers, "layers", 50, "number of layers")
	fs.IntVar(&o.interval, "interval", 0, "full_attention_interval (0: = layers, one attention layer last)")
	fs.IntVar(&o.experts, "experts", 8, "MoE experts (top-2)")
	fs.IntVar(&o.hidden, "hidden", 64, "hidden size")
	fs.IntVar(&o.tokens, "tokens", 12000, "tokens to decode")
	fs.IntVar(&o.reportEvery, "report-every", 250, "sample and print every N tokens")
	fs.BoolVar(&o.ops, "ops", false, "gated-delta recurrence as a composition of ops instead of the kernel")
	fs.IntVar(&o.evalCacheEvery, "eval-cache-every", 0, "evaluate every cache array every N tokens (0: never); pins the mechanism")
	o.failSlope = 0.5
	fs.Func("fail-slope", "live objects/token above which the run counts as leaking (default 0.5)", func(v string) error {
		f, err := strconv.ParseFloat(v, 64)
		o.failSlope, o.failSlopeText = f, v
		return err
	})
	fs.StringVar(&o.jsonOut, "json-out", "", "write the run's figures as JSON to this path")
	fs.BoolVar(&o.disableCompile, "disable-compile", false, "accepted for compatibility: ingot has no mx.compile, so there is nothing to disable")
	policy := fs.String("cache", "lazy", "cache bookkeeping: lazy (mlx-lm, leaks) or eager (host integers, the fix)")
	fs.IntVar(&o.limit, "limit", 0, fmt.Sprintf("resource limit in buffer objects (default: $%s, else the device's, else %d)", alloc.ResourceLimitEnv, alloc.DefaultResourceLimit))
	fs.StringVar(&o.device, "device", "auto", "cpu, metal, or auto (Metal when available)")
	fs.StringVar(&o.plot, "plot", "", "write an SVG chart of live buffers vs token to this path (.svg)")
	fs.BoolVar(&o.compare, "compare", false, "run lazy, eager and attention-only one after another (one chart with --plot)")
	fs.BoolVar(&o.census, "census", false, "record where unevaluated nodes were created and report the growing sites")
	fs.Int64Var(&o.seed, "seed", 0, "random-weight seed (with --mode server also the requests' prompts, and then allowed with --model)")
	fs.StringVar(&o.cpuProfile, "cpuprofile", "", "write a Go CPU profile of the run to this path")
	fs.IntVar(&o.requests, "requests", 48, "server mode: requests to complete")
	fs.IntVar(&o.reqTokens, "request-tokens", 200, "server mode: tokens per request")
	fs.IntVar(&o.concurrency, "concurrency", 4, "server mode: requests decoding at once")
	fs.IntVar(&o.promptLen, "prompt-len", 8, "server mode: longest prompt (prompts vary in length up to it)")
	o.textFlagSet(fs)
	fs.BoolVar(&o.fastPrompts, "fast-prompts", false, "prompt products take the CPU's dot-product instructions: int8 at 4 and 8 bits (AVX512-VNNI; x rounded to bytes, logits move), bfloat16 pairs for bfloat16 weights (AVX512_BF16; another summation order); decode steps keep the float path")
	fs.IntVar(&o.clearCacheEvery, "clear-cache-every", 256, "release the allocator's buffer cache every N tokens, as mlx-lm's generate_step does (0: never)")
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
	o.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { o.set[f.Name] = true })
	if err := o.validate(); err != nil {
		return nil, err
	}
	return o, o.checkOutputs()
}

// validateModel checks the flags that choose the model: --config takes the layer
// structure from the file (so --model-type, --layers, --interval and --attention-only
// do not apply); a dense model has no experts to count.
func (o *options) validateModel() error {
	bad := func(f string, args ...any) error { return fmt.Errorf("%w: "+f, append([]any{errUsage}, args...)...) }
	// An empty path would read as "flag not given" below and run the random model.
	if o.set["model"] && strings.TrimSpace(o.modelDir) == "" {
		return bad("--model needs a checkpoint directory, not %q", o.modelDir)
	}
	if o.set["config"] && strings.TrimSpace(o.configPath) == "" {
		return bad("--config needs a config.json path, not %q", o.configPath)
	}
	if o.modelDir != "" {
		// The checkpoint decides the model: a flag that shapes the random one is refused.
		for _, f := range []string{"model-type", "config", "layers", "interval", "experts", "hidden", "seed", "attention-only"} {
			if f == "seed" && o.mode == "server" {
				continue // it also picks the server's request prompts
			}
			if o.set[f] {
				return bad("--%s does not apply with --model (the checkpoint decides the model)", f)
			}
		}
		return nil
	}
	if o.configPath != "" {
		for _, f := range []string{"model-type", "layers", "interval", "attention-only"} {
			if o.set[f] {
				return bad("--%s does not apply with --config (the file gives the layer structure)", f)
			}
		}
		return nil
	}
	// The registry says which types exist; the type's repro model says what applies.
	types := models.Types()
	if !slices.Contains(types, o.modelType) {
		return bad("--model-type must be one of %s, not %q", strings.Join(types, ", "), o.modelType)
	}
	cfg, err := models.ReproConfig(nn.ReproOptions{ModelType: o.modelType, Layers: 2})
	if err == nil {
		var d *nn.Description
		if d, err = cfg.Describe(); err == nil {
			return o.validateShape(d)
		}
	}
	return bad("--model-type %s: %v", o.modelType, err)
}

// validateShape refuses the repro flags that do not apply to the model type's shape
// (d: its repro model): --experts on a dense model or too few to route top-2, and
// --interval or --attention-only on a model with no recurrent layer.
func (o *options) validateShape(d *nn.Description) error {
	bad := func(f string, args ...any) error { return fmt.Errorf("%w: "+f, append([]any{errUsage}, args...)...) }
	switch {
	case d.Experts > 0 && o.experts < 2:
		return bad("--experts must be in 2..512 for %s (top-2 routing), not %d", o.modelType, o.experts)
	case d.Experts == 0 && o.set["experts"]:
		return bad("--experts does not apply to --model-type %s (dense MLPs)", o.modelType)
	}
	if nn.CountKinds(d.Kinds, nn.Recurrent) == 0 {
		for _, f := range []string{"interval", "attention-only"} {
			if o.set[f] {
				return bad("--%s does not apply to --model-type %s (every layer attends)", f, o.modelType)
			}
		}
	}
	return nil
}

// period is the sampling period: --report-every, shortened when the run would
// otherwise give the slope window too few samples.
func (o *options) period() int {
	return max(1, min(o.reportEvery, o.tokens/minSamples))
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
	case o.experts < 1 || o.experts > 512:
		return bad("--experts must be in 1..512, not %d", o.experts)
	case o.hidden < 16 || o.hidden > 4096 || o.hidden%16 != 0:
		return bad("--hidden must be a multiple of 16 in 16..4096, not %d", o.hidden)
	case o.tokens < 1 || o.tokens > maxTokens:
		return bad("--tokens must be in %d..%d, not %d", minSamples, maxTokens, o.tokens)
	case o.tokens < minSamples && o.mode != "server":
		return bad("--tokens %d is too few for a verdict: the slope needs at least %d samples (--tokens >= %d)", o.tokens, minSamples, minSamples)
	case o.reportEvery < 1:
		return bad("--report-every must be >= 1, not %d", o.reportEvery)
	case o.evalCacheEvery < 0:
		return bad("--eval-cache-every must be >= 0, not %d", o.evalCacheEvery)
	case o.clearCacheEvery < 0:
		return bad("--clear-cache-every must be >= 0, not %d", o.clearCacheEvery)
	case math.IsNaN(o.failSlope) || math.IsInf(o.failSlope, 0) || o.failSlope < 0:
		return bad("--fail-slope must be a finite number >= 0, not %s", o.failSlopeText)
	case o.set["limit"] && o.limit < 1:
		return bad("--limit must be >= 1, not %d", o.limit)
	case o.requests < 1 || o.reqTokens < 1 || o.concurrency < 1 || o.promptLen < 1:
		return bad("--requests, --request-tokens, --concurrency and --prompt-len must be >= 1")
	case o.requests > maxTokens/o.reqTokens:
		return bad("--requests x --request-tokens must be at most %d", maxTokens)
	case o.concurrency > 256 || o.promptLen > 4096:
		return bad("--concurrency must be at most 256 and --prompt-len at most 4096")
	case o.mode == "server" && o.requests < minSamples:
		return bad("--requests %d is too few for a verdict: the slope needs at least %d samples, one per completed request (--requests >= %d)", o.requests, minSamples, minSamples)
	}
	if err := o.validateModel(); err != nil {
		return err
	}
	if err := o.validateText(); err != nil {
		return err
	}
	if o.predictOnly {
		return o.validatePredictOnly()
	}
	// Flags that the chosen mode would silently ignore are refused.
	serverOnly := []string{"requests", "request-tokens", "concurrency", "prompt-len"}
	decodeOnly := []string{"tokens", "report-every", "census", "eval-cache-every"}
	wrong := serverOnly
	if o.mode == "server" {
		wrong = decodeOnly
	}
	for _, f := range wrong {
		if o.set[f] {
			return bad("--%s does not apply to --mode %s", f, o.mode)
		}
	}
	if o.plot != "" {
		if ext := strings.ToLower(filepath.Ext(o.plot)); ext != ".svg" {
			// SVG is the one chart format (package chart says why): no PNG.
			return bad("--plot %s: the chart is SVG only: use a path ending in .svg", filepath.Base(o.plot))
		}
	}
	return nil
}

// predictOnlyFlags are the flags --predict-only uses: the model's and the limit's.
var predictOnlyFlags = map[string]bool{"predict-only": true, "model": true, "config": true, "model-type": true,
	"layers": true, "interval": true, "experts": true, "hidden": true, "attention-only": true,
	"limit": true, "device": true, "mode": true}

// validatePredictOnly refuses the flags a prediction would ignore (nothing is decoded).
func (o *options) validatePredictOnly() error {
	if o.mode == "server" {
		return fmt.Errorf("%w: --predict-only predicts one completion (--mode batch or plain), not --mode server", errUsage)
	}
	var wrong []string
	for f := range o.set {
		if !predictOnlyFlags[f] {
			wrong = append(wrong, "--"+f)
		}
	}
	if len(wrong) > 0 {
		slices.Sort(wrong)
		verb := "does"
		if len(wrong) > 1 {
			verb = "do"
		}
		return fmt.Errorf("%w: %s %s not apply with --predict-only (nothing is decoded)", errUsage, strings.Join(wrong, ", "), verb)
	}
	return nil
}
