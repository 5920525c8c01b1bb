package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/ingotml/ingot/alloc"
	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/models"
	"github.com/ingotml/ingot/predict"
	"github.com/ingotml/ingot/repro"
)

// result is what one run measured (the run loop's).
type result = repro.Result

// comma formats n with thousands separators, as the repro prints.
func comma(n int) string { return predict.Comma(n) }

// runSpec is one run's configuration (compare mode runs three).
type runSpec struct {
	label         string
	policy        cache.Policy
	attentionOnly bool
}

// setup builds the graph and the model for a run (the random one, or --model's
// checkpoint), after checking that the model fits the machine's memory.
func setup(o *options, spec runSpec, out io.Writer) (*graph.Graph, nn.Model, *result, error) {
	var cfg models.Config
	if o.modelDir == "" {
		var err error
		if cfg, err = modelConfig(o, spec); err != nil {
			return nil, nil, nil, err
		}
	}
	dev, name, err := openDevice(o, out)
	if err != nil {
		return nil, nil, nil, err
	}
	lim, err := resolveLimit(o, dev)
	if err != nil {
		return nil, nil, nil, err
	}
	var g *graph.Graph
	var m nn.Model
	var info *checkpointInfo
	var buffers int
	if o.modelDir != "" {
		g, m, info, buffers, err = loadCheckpoint(o, spec, dev, lim)
	} else {
		g, m, err = buildRandom(o, spec, cfg, dev, lim)
	}
	// The kernels compiled in the background while the model loaded; a family that
	// failed refuses Metal here, before the first token (a load that failed may have
	// failed for that reason).
	if retry, rerr := deviceReady(o, dev, out); rerr != nil || retry {
		if rerr != nil {
			return nil, nil, nil, rerr
		}
		return setup(o, spec, out)
	}
	if err != nil {
		return nil, nil, nil, err
	}
	r := repro.NewResult(g, m, o.mode, spec.policy)
	r.Label, r.Device, r.LimitSource = spec.label, name, lim.source
	if info != nil {
		fmt.Fprintf(out, "[model] %s cache=%s device=%s limit=%d (%s)\n", info.modelSummary(buffers), spec.policy, name, r.Limit, r.LimitSource)
		return g, m, r, nil
	}
	d, err := cfg.Describe()
	if err != nil {
		return nil, nil, nil, err
	}
	source := d.ModelType
	if o.configPath != "" {
		source = fmt.Sprintf("%s from %s", d.ModelType, o.configPath)
	}
	predict.WriteRunModel(out, source, d, spec.policy, name, r.Limit, r.LimitSource)
	return g, m, r, nil
}

// explicitRelease is graph.Options.ExplicitRelease for the runs: every loop here releases
// each array it drops, so a sample's Synchronize needs no garbage collection, whose cost
// grows with the lazy run's dead chain. TestExplicitReleaseChangesNoCount turns it off
// and checks that every count is the same.
var explicitRelease = true

// graphOptions are a run's graph options.
func graphOptions(o *options, lim limit) graph.Options {
	return graph.Options{Alloc: alloc.Config{ResourceLimit: lim.n}, ExplicitRelease: explicitRelease, FastPrompts: o.fastPrompts}
}

// buildRandom checks that the random model of cfg fits the machine's memory and builds
// it on a new graph.
func buildRandom(o *options, spec runSpec, cfg models.Config, dev graph.Device, lim limit) (*graph.Graph, nn.Model, error) {
	d, err := cfg.Describe()
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", errUsage, err)
	}
	est, err := estimateFor(o, spec, d, lim.n)
	if err != nil {
		return nil, nil, err
	}
	if err := checkFits(est, alloc.New(dev.Provider(), alloc.Config{}).Stats().MemoryLimit); err != nil {
		return nil, nil, err
	}
	g := graph.New(dev, graphOptions(o, lim))
	m, err := cfg.Random(g, o.seed, nn.Options{OpsGatedDelta: o.ops})
	if err == nil {
		err = g.Synchronize() // the weights are uploaded: a limit below them fails here
	}
	if isLimit(err) {
		return nil, nil, lim.belowBaseline(fmt.Sprintf("its %s weight arrays alone need more buffer objects than that", comma(est.Arrays)))
	}
	return g, m, err
}

// hooks are the command's view of a run: the [predict] line, the samples and census
// rows as they come, the progress line in between.
func hooks(out io.Writer, prog *progress, g *graph.Graph) repro.Hooks {
	return repro.Hooks{
		Start:    prog.start,
		Baseline: func(r *result) { r.WritePredict(out) },
		Sample: func(r *result, s predict.Sample, sites []graph.CensusSite) {
			prog.clear()
			printSample(out, s)
			printCensusSites(out, sites)
		},
		Step: func(r *result, n int) { prog.update(n, g) },
	}
}

// decodeRun runs the plain or batch repro and samples it. It stops at the first step
// after ctx is done (an interrupt) with what it has measured.
func decodeRun(ctx context.Context, o *options, spec runSpec, out io.Writer, prog *progress) (*result, error) {
	g, m, r, err := setup(o, spec, out)
	if err != nil {
		return nil, err
	}
	h := hooks(out, prog, g)
	start := h.Start
	h.Start = func(r *result) {
		if p := o.period(); p != o.reportEvery {
			fmt.Fprintf(out, "[note] --report-every %d -> %d: the slope needs at least %d samples\n", o.reportEvery, p, minSamples)
		}
		start(r)
	}
	opts := repro.Options{Tokens: o.tokens, Period: o.period(), EvalCacheEvery: o.evalCacheEvery,
		ClearCacheEvery: o.clearCacheEvery, Census: o.census}
	finish := o.text.run.apply(&opts, &h) // a text prompt: its ids, its stop, the text streamed
	err = repro.Decode(ctx, g, m, r, opts, h)
	prog.clear()
	if err != nil {
		return nil, baselineErr(err, r)
	}
	finish(r)
	return r, nil
}

// baselineErr turns the run loop's *repro.BaselineError into the usage error that
// names the limit's source.
func baselineErr(err error, r *result) error {
	var be *repro.BaselineError
	if errors.As(err, &be) {
		return limit{n: r.Limit, source: r.LimitSource}.belowBaseline(be.Why)
	}
	return err
}

// isLimit reports whether err is the resource-limit error.
func isLimit(err error) bool { return repro.IsLimit(err) }

func printSample(out io.Writer, s predict.Sample) { s.WriteLine(out, true) }
