package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"

	"github.com/ingotml/ingot/alloc"
	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/generate"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/models"
	"github.com/ingotml/ingot/tensor"
)

// sample is one report point.
type sample struct {
	Token      int     `json:"-"`
	ActiveMB   float64 `json:"active_mb"`
	CacheMB    float64 `json:"cache_mb"`
	RSSMB      float64 `json:"rss_mb"`
	HeapMB     float64 `json:"heap_mb"` // Go heap live at the last collection (see takeSample)
	Count      int     `json:"count"`
	CacheCount int     `json:"cache_count"`
	Live       int     `json:"live"`
}

// result is what one run measured.
type result struct {
	label       string
	policy      cache.Policy
	mode        string
	device      string
	layers      int
	nSSM        int
	nAttn       int
	interval    int
	limit       int    // the allocator's resource limit
	limitSource string // where it came from: --limit, INGOT_RESOURCE_LIMIT, device, default
	rate        int    // predicted leak objects/token on the stock path (0: none expected)
	baseline    int    // live buffers before decoding
	samples     []sample
	histFirst   []alloc.SizeClass
	histLast    []alloc.SizeClass
	tokens      []int32
	crashed     bool
	interrupted bool
	crashErr    error
	crashToken  int
	seconds     float64
	census      *censusReport
	perRequest  []sample // server mode: one sample per completed request
}

// crash records err as the crash when it is the resource-limit error.
func (r *result) crash(err error) bool {
	var rle *alloc.ResourceLimitError
	if !errors.As(err, &rle) {
		return false
	}
	r.crashed, r.crashErr, r.crashToken = true, err, len(r.tokens)
	return true
}

// leaks reports whether this run's own bookkeeping leaks: the stock (lazy) policy on
// a path that arms the caches of a model with more than one GDN layer.
func (r *result) leaks() bool { return r.rate > 0 && r.policy == cache.Lazy }

// predictedCrash is the token at which this run hits the limit (0: it does not leak).
func (r *result) predictedCrash() int {
	if !r.leaks() {
		return 0
	}
	return r.stockCrash()
}

// stockCrash is the token at which one completion on the stock path hits the limit.
func (r *result) stockCrash() int {
	if r.rate <= 0 {
		return 0
	}
	return (r.limit - r.baseline) / r.rate
}

func (r *result) tokensPerSecond() float64 {
	if r.seconds <= 0 {
		return 0
	}
	return float64(len(r.tokens)) / r.seconds
}

// comma formats n with thousands separators, as the repro prints.
func comma(n int) string {
	s := strconv.Itoa(n)
	if n < 0 {
		return "-" + comma(-n)
	}
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// rssMB reads the resident set size (Linux /proc; 0 elsewhere).
func rssMB() float64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.Atoi(f[1])
	return float64(pages) * float64(os.Getpagesize()) / (1 << 20)
}

// takeSample waits for the work in flight and reads the counts, exact under the graph's
// explicit releases without a collection. heap forces one first, so that the heap
// figure is what is live now: a run's first and last samples, which the per-link
// figure compares. The others report the live heap of the latest collection, and the
// run does not trace its dead chain at every sample.
func takeSample(g *graph.Graph, tok int, heap bool) (sample, error) {
	err := g.Synchronize()
	if heap {
		runtime.GC()
	}
	a := g.Allocator()
	st := a.Stats()
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(live)
	return sample{
		HeapMB:     float64(live[0].Value.Uint64()) / (1 << 20),
		Token:      tok,
		ActiveMB:   float64(st.ActiveMemory) / (1 << 20),
		CacheMB:    float64(st.CacheMemory) / (1 << 20),
		RSSMB:      rssMB(),
		Count:      st.ActiveBufferCount,
		CacheCount: st.CacheBufferCount,
		Live:       st.LiveBufferCount,
	}, err
}

// runSpec is one run's configuration (compare mode runs three).
type runSpec struct {
	label         string
	policy        cache.Policy
	attentionOnly bool
}

// decoder abstracts the plain and batch paths for the report loop.
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
	dev, name, err := openDevice(o.device)
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
		if g, m, info, buffers, err = loadCheckpoint(o, spec, dev, lim); err != nil {
			return nil, nil, nil, err
		}
	} else if g, m, err = buildRandom(o, spec, cfg, dev, lim); err != nil {
		return nil, nil, nil, err
	}
	kinds := m.LayerKinds()
	r := &result{label: spec.label, policy: spec.policy, mode: o.mode, device: name,
		layers: len(kinds), nSSM: nn.CountKinds(kinds, nn.Recurrent), interval: interval(kinds), limit: g.Allocator().ResourceLimit(),
		limitSource: lim.source, rate: leakRate(o.mode, kinds)}
	r.nAttn = r.layers - r.nSSM
	if info != nil {
		fmt.Fprintf(out, "[model] %s cache=%s device=%s limit=%d (%s)\n", info.modelSummary(buffers), spec.policy, name, r.limit, r.limitSource)
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
	fmt.Fprintf(out, "[model] %s: layers=%d (ssm=%d attn=%d) interval=%d experts=%d hidden=%d cache=%s device=%s limit=%d (%s)\n",
		source, r.layers, r.nSSM, r.nAttn, r.interval, d.Experts, d.Hidden, spec.policy, name, r.limit, r.limitSource)
	return g, m, r, nil
}

// leakRate is the predicted leak in objects/token: the stock batch path leaks one link
// per GDN layer but layer 0's per token (the model reads layer 0's cache for the SSM
// mask every step, which evaluates it); the plain path never arms the leak.
func leakRate(mode string, kinds []nn.LayerKind) int {
	n := nn.CountKinds(kinds, nn.Recurrent)
	if mode != "plain" && n > 1 && kinds[0] == nn.Recurrent {
		return n - 1
	}
	return 0
}

// explicitRelease is graph.Options.ExplicitRelease for the runs: every loop here releases
// each array it drops, so a sample's Synchronize needs no garbage collection, whose cost
// grows with the lazy run's dead chain. TestExplicitReleaseChangesNoCount turns it off
// and checks that every count is the same.
var explicitRelease = true

// graphOptions are a run's graph options.
func graphOptions(lim limit) graph.Options {
	return graph.Options{Alloc: alloc.Config{ResourceLimit: lim.n}, ExplicitRelease: explicitRelease}
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
	g := graph.New(dev, graphOptions(lim))
	m, err := cfg.Random(g, o.seed, nn.Options{OpsGatedDelta: o.ops})
	if err == nil {
		err = g.Synchronize() // the weights are uploaded: a limit below them fails here
	}
	if isLimit(err) {
		return nil, nil, lim.belowBaseline(fmt.Sprintf("its %s weight arrays alone need more buffer objects than that", comma(est.arrays)))
	}
	return g, m, err
}

// interval recovers full_attention_interval from the layer pattern: the first attention
// layer's index + 1 (0 when there is none).
func interval(kinds []nn.LayerKind) int {
	for i, k := range kinds {
		if k == nn.Attention {
			return i + 1
		}
	}
	return 0
}

func printPredict(out io.Writer, r *result) {
	switch {
	case r.mode == "plain":
		fmt.Fprintf(out, "[predict] plain path (generate_step): caches never armed -> no leak expected\n")
	case r.rate == 0:
		fmt.Fprintf(out, "[predict] %d GDN layers -> no leak expected\n", r.nSSM)
	case !r.leaks():
		fmt.Fprintf(out, "[predict] %s bookkeeping (the fix) -> no leak expected; the stock lazy path leaks ~%d objects/token\n",
			r.policy, r.rate)
	default:
		fmt.Fprintf(out, "[predict] leak ~%d objects/token -> resource-limit crash near token ~%s (if unpatched)\n",
			r.rate, comma(r.predictedCrash()))
	}
}

// decodeRun runs the plain or batch repro and samples it. It stops at the first step
// after ctx is done (an interrupt) with what it has measured.
func decodeRun(ctx context.Context, o *options, spec runSpec, out io.Writer, prog *progress) (*result, error) {
	g, m, r, err := setup(o, spec, out)
	if err != nil {
		return nil, err
	}
	lim := limit{n: r.limit, source: r.limitSource}
	prompt := []int32{1, 2, 3, 4, 5, 6, 7, 8}
	var d decoder
	if o.mode == "plain" {
		p, err := generate.NewPlain(m, spec.policy, prompt)
		if isLimit(err) {
			return nil, lim.belowBaseline("the model and its prompt's prefill need more buffer objects than that")
		}
		if err != nil {
			return nil, err
		}
		d = plainDecoder{p}
	} else {
		b := generate.NewBatchGenerator(m, spec.policy, 0)
		// One more token than we decode: the batch is still live when we stop (not drained).
		if err := b.Insert(generate.Request{ID: 0, Prompt: prompt, MaxTokens: o.tokens + 1}); err != nil {
			return nil, err
		}
		d = batchDecoder{b}
	}
	if p := o.period(); p != o.reportEvery {
		fmt.Fprintf(out, "[note] --report-every %d -> %d: the slope needs at least %d samples\n", o.reportEvery, p, minSamples)
	}
	var cen *censusTracker
	if o.census {
		cen = startCensus(g)
	}
	prog.start(r)
	start := time.Now()
	next := o.period()
	for len(r.tokens) < o.tokens {
		if ctx.Err() != nil {
			r.interrupted = true
			break
		}
		toks, err := d.next()
		if r.crash(err) {
			if r.baseline == 0 {
				// Nothing decoded yet: the model cannot start under this limit.
				return nil, lim.belowBaseline("the model and its first decoded token need more buffer objects than that")
			}
			break
		}
		if err != nil {
			return nil, err
		}
		r.tokens = append(r.tokens, toks...)
		n := len(r.tokens)
		if n > 0 && n == len(toks) {
			// The baseline: live buffers once the prompt is in and decoding has begun,
			// less the links the first tokens already added.
			s, err := takeSample(g, n, false)
			if err != nil {
				return nil, err
			}
			r.baseline = s.Live
			if r.leaks() {
				r.baseline -= r.rate * n
			}
			printPredict(out, r)
		}
		if len(toks) > 0 {
			if o.evalCacheEvery > 0 && n%o.evalCacheEvery == 0 {
				if err := evalCaches(d.caches()); err != nil {
					return nil, err
				}
			}
			if o.clearCacheEvery > 0 && n%o.clearCacheEvery == 0 {
				g.Allocator().ClearCache()
			}
		}
		prog.update(n, g)
		if n >= next || n >= o.tokens {
			next = n + o.period()
			s, err := takeSample(g, n, len(r.samples) == 0 || n >= o.tokens)
			if err != nil {
				return nil, err
			}
			r.addSample(g, s)
			prog.clear()
			printSample(out, s)
			if cen != nil {
				cen.report(out, n)
			}
		}
	}
	r.seconds = time.Since(start).Seconds()
	prog.clear()
	sampled := len(r.samples) > 0 && r.samples[len(r.samples)-1].Token == len(r.tokens)
	if r.crashed || (r.interrupted && len(r.tokens) > 0 && !sampled) {
		// A last sample at the crash (the chains are still live: the caches hold
		// them) or where the interrupt stopped the run.
		s, _ := takeSample(g, len(r.tokens), true) // after a crash: the recorded limit error again
		r.addSample(g, s)
		printSample(out, s)
	}
	if cen != nil {
		r.census = cen.finish()
	}
	// Go frees what the program no longer uses: keep the generator (and so the caches
	// and their chains) and the model alive through the last sample.
	runtime.KeepAlive(d)
	runtime.KeepAlive(m)
	return r, nil
}

// isLimit reports whether err is the resource-limit error.
func isLimit(err error) bool {
	var rle *alloc.ResourceLimitError
	return errors.As(err, &rle)
}

func (r *result) addSample(g *graph.Graph, s sample) {
	h := g.Allocator().Histogram()
	if len(r.samples) == 0 {
		r.histFirst = h
	}
	r.histLast = h
	r.samples = append(r.samples, s)
}

// evalCaches evaluates every array every cache holds (the --eval-cache-every probe).
func evalCaches(cs []cache.Cache) error {
	var all []tensor.Array
	for _, c := range cs {
		for _, a := range c.State() {
			if a.Valid() {
				all = append(all, a)
			}
		}
	}
	defer func() {
		for _, a := range all {
			tensor.Release(a) // State's references: dropped now, as the graph's contract asks
		}
	}()
	return tensor.Eval(all...)
}

func printSample(out io.Writer, s sample) {
	fmt.Fprintf(out, "tok %6d live=%d (+cached=%d = %d) active=%.1fMB cache=%.1fMB rss=%.1fMB heap=%.1fMB\n",
		s.Token, s.Live, s.CacheCount, s.Count, s.ActiveMB, s.CacheMB, s.RSSMB, s.HeapMB)
}
