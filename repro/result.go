package repro

import (
	"errors"
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"

	"github.com/ingotml/ingot/alloc"
	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/generate"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/predict"
)

// Result is what one run measured: the record the verdict statistics read, and what
// describes the run.
type Result struct {
	predict.Run
	Label       string // the run's name in a comparison
	Device      string // cpu or metal
	LimitSource string // where the limit came from: --limit, INGOT_RESOURCE_LIMIT, device, default
	Layers      int
	Attention   int
	Interval    int // full_attention_interval recovered from the layer pattern
	Seconds     float64
	Stopped     bool                // the completion ended at an end-of-sequence token (Options.Stop)
	Census      *CensusReport       // nil unless the census was on
	Batch       generate.BatchStats // server mode: the decode steps and their rows
}

// NewResult starts the result of a run of m on g: its structure, the graph's limit and
// the predicted leak for mode's path with policy's bookkeeping.
func NewResult(g *graph.Graph, m nn.Model, mode string, policy cache.Policy) *Result {
	kinds := m.LayerKinds()
	r := &Result{Layers: len(kinds), Interval: predict.Interval(kinds)}
	r.Mode, r.Policy, r.Limit = mode, policy, g.Allocator().ResourceLimit()
	r.GDN = nn.CountKinds(kinds, nn.Recurrent)
	r.Attention = r.Layers - r.GDN
	r.Rate = predict.Slope(mode, kinds)
	return r
}

// TokensPerSecond is the decode speed.
func (r *Result) TokensPerSecond() float64 {
	if r.Seconds <= 0 {
		return 0
	}
	return float64(len(r.Tokens)) / r.Seconds
}

func (r *Result) addSample(g *graph.Graph, s predict.Sample) {
	h := g.Allocator().Histogram()
	if len(r.Samples) == 0 {
		r.HistFirst = h
	}
	r.HistLast = h
	r.Samples = append(r.Samples, s)
}

// BaselineError is a run that cannot start under its resource limit: the model and
// its first steps need more buffer objects than that.
type BaselineError struct {
	Why string // what needs them: "the model and its first decoded token need ..."
	Err error  // the resource-limit error
}

// Error says what needs the buffers, then the limit error.
func (e *BaselineError) Error() string { return e.Why + ": " + e.Err.Error() }

// Unwrap returns the resource-limit error.
func (e *BaselineError) Unwrap() error { return e.Err }

// IsLimit reports whether err is the resource-limit error.
func IsLimit(err error) bool {
	var rle *alloc.ResourceLimitError
	return errors.As(err, &rle)
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

// TakeSample waits for the work in flight and reads the counts, exact under the
// graph's explicit releases without a collection. heap forces one first, so that the
// heap figure is what is live now: a run's first and last samples, which the per-link
// figure compares. The others report the live heap of the latest collection, and the
// run does not trace its dead chain at every sample.
func TakeSample(g *graph.Graph, tok int, heap bool) (predict.Sample, error) {
	err := g.Synchronize()
	if heap {
		runtime.GC()
	}
	st := g.Allocator().Stats()
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(live)
	return predict.Sample{
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
