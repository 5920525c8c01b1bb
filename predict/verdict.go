package predict

import (
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/ingotml/ingot/alloc"
	"github.com/ingotml/ingot/cache"
)

// MinSamples is the fewest samples a slope verdict is drawn from: the window
// samples[len/4 : len-1] then holds 5 of them.
const MinSamples = 8

// Sample is one measured point of a run.
type Sample struct {
	Token      int     `json:"-"` // tokens decoded (completed requests under churn)
	ActiveMB   float64 `json:"active_mb"`
	CacheMB    float64 `json:"cache_mb"`
	RSSMB      float64 `json:"rss_mb"`
	HeapMB     float64 `json:"heap_mb"` // Go heap live at the last collection
	Count      int     `json:"count"`
	CacheCount int     `json:"cache_count"`
	Live       int     `json:"live"`
}

// Run is what a decode measured, as the verdict statistics read it.
type Run struct {
	Mode     string       // batch, plain or server
	Policy   cache.Policy // the cache bookkeeping
	Limit    int          // the allocator's resource limit
	Rate     int          // the stock path's predicted leak, objects/token (0: none)
	Baseline int          // live buffers once decoding began
	GDN      int          // GDN layers

	Samples             []Sample
	HistFirst, HistLast []alloc.SizeClass // live buffers by size class at the first and last sample
	Tokens              []int32
	Crashed             bool
	Interrupted         bool
	CrashErr            error
	CrashToken          int
}

// Verdict is a run's outcome.
type Verdict string

// The verdicts, as the JSON report spells them.
const (
	Crashed Verdict = "crashed" // the resource limit was hit
	Leaking Verdict = "leaking" // the slope is above the bar
	Flat    Verdict = "flat"    // the slope is at or below it
	None    Verdict = "none"    // too few samples for a slope
)

// Exit codes, as the repro: 0 flat (or survived), 1 leak detected, 2 crash
// reproduced; a run with no verdict failed (70, sysexits EX_SOFTWARE).
const (
	ExitFlat    = 0
	ExitLeak    = 1
	ExitCrash   = 2
	ExitFailure = 70
)

// ExitCode is the command's exit code for v.
func (v Verdict) ExitCode() int {
	switch v {
	case Crashed:
		return ExitCrash
	case Leaking:
		return ExitLeak
	case Flat:
		return ExitFlat
	}
	return ExitFailure
}

// Crash records err as the crash when it is the resource-limit error.
func (r *Run) Crash(err error) bool {
	var rle *alloc.ResourceLimitError
	if !errors.As(err, &rle) {
		return false
	}
	r.Crashed, r.CrashErr, r.CrashToken = true, err, len(r.Tokens)
	return true
}

// Leaks reports whether this run's own bookkeeping leaks: the stock (lazy) policy on
// a path that arms the caches of a model with more than one GDN layer.
func (r *Run) Leaks() bool { return r.Rate > 0 && r.Policy == cache.Lazy }

// PredictedCrash is the token at which this run hits the limit (0: it does not leak).
func (r *Run) PredictedCrash() int {
	if !r.Leaks() {
		return 0
	}
	return r.StockCrash()
}

// StockCrash is the token at which one completion on the stock path hits the limit.
func (r *Run) StockCrash() int { return CrashToken(r.Limit, r.Baseline, r.Rate) }

// Unit is what the slope is per: a token, or under churn a completed request.
func (r *Run) Unit() string {
	if r.Mode == "server" {
		return "request"
	}
	return "token"
}

// FitSlope is the least-squares slope of live buffers per sample step (token, or
// completed request under churn) over the repro's window, samples[len/4 : len-1]
// (skip warm-up and the final sample). ok is false when there are fewer than
// MinSamples samples: such a slope is no verdict.
func FitSlope(ss []Sample) (slope float64, ok bool) {
	w := ss
	if len(ss) >= 4 {
		w = ss[len(ss)/4 : len(ss)-1]
	}
	ok = len(ss) >= MinSamples
	if len(w) < 2 {
		return 0, ok
	}
	var sx, sy, sxx, sxy float64
	for _, s := range w {
		x, y := float64(s.Token), float64(s.Live)
		sx += x
		sy += y
		sxx += x * x
		sxy += x * y
	}
	n := float64(len(w))
	den := n*sxx - sx*sx
	if den == 0 {
		return 0, ok
	}
	return (n*sxy - sx*sy) / den, ok
}

// Verdict is the run's outcome against the bar failSlope (live objects per unit).
func (r *Run) Verdict(failSlope float64) Verdict {
	sl, ok := FitSlope(r.Samples)
	switch {
	case r.Crashed:
		return Crashed
	case !ok:
		return None
	case sl > failSlope:
		return Leaking
	}
	return Flat
}

// WritePredict prints the run's [predict] line.
func (r *Run) WritePredict(out io.Writer) {
	WritePredict(out, r.Mode, r.Policy, r.GDN, r.Rate, r.PredictedCrash())
}

// WriteVerdict prints the [verdict] line.
func (r *Run) WriteVerdict(out io.Writer, failSlope float64) {
	sl, ok := FitSlope(r.Samples)
	v := r.Verdict(failSlope)
	if r.Mode == "server" {
		switch v {
		case Crashed:
			fmt.Fprintf(out, "[verdict] CRASH REPRODUCED under churn: %v after %s tokens\n", r.CrashErr, Comma(r.CrashToken))
		case None:
			fmt.Fprintf(out, "[verdict] NONE: %d completed requests; a slope needs at least %d\n", len(r.Samples), MinSamples)
		case Leaking:
			fmt.Fprintf(out, "[verdict] LEAKING across churn: %+.1f LIVE buffer objects per completed request (the batch never drained)\n", sl)
		default:
			fmt.Fprintf(out, "[verdict] FLAT across churn: %+.3f live buffer objects per completed request\n", sl)
		}
		return
	}
	switch v {
	case Crashed:
		before := fmt.Sprintf("%+.1f live objects/token before it", sl)
		if !ok {
			before = fmt.Sprintf("too few samples before it for a slope: %d of %d", len(r.Samples), MinSamples)
		}
		fmt.Fprintf(out, "[verdict] CRASH REPRODUCED: %v at token %s (predicted ~%s; %s)\n",
			r.CrashErr, Comma(r.CrashToken), Comma(r.PredictedCrash()), before)
	case None:
		fmt.Fprintf(out, "[verdict] NONE: %d samples over %s tokens; a slope needs at least %d\n",
			len(r.Samples), Comma(len(r.Tokens)), MinSamples)
	case Leaking:
		last := r.Samples[len(r.Samples)-1]
		eta := last.Token + int(float64(r.Limit-last.Count)/sl)
		fmt.Fprintf(out, "[verdict] LEAKING: %+.1f LIVE buffer objects/token (bytes flat: %.1fMB active); resource-limit crash near token ~%s\n",
			sl, last.ActiveMB, Comma(eta))
	default:
		fmt.Fprintf(out, "[verdict] FLAT: %+.3f live buffer objects/token over %d tokens\n", sl, len(r.Tokens))
	}
}

// Drift is one size class's live buffers at the first and the last sample.
type Drift struct {
	Bytes       int64
	First, Last int
}

// Drift lists live buffers per power-of-two size class, first sample vs last, by size.
func (r *Run) Drift() []Drift {
	at := map[int64]int{}
	var out []Drift
	add := func(h []alloc.SizeClass, last bool) {
		for _, c := range h {
			i, ok := at[c.Bytes]
			if !ok {
				i = len(out)
				at[c.Bytes] = i
				out = append(out, Drift{Bytes: c.Bytes})
			}
			if last {
				out[i].Last = c.Count
			} else {
				out[i].First = c.Count
			}
		}
	}
	add(r.HistFirst, false)
	add(r.HistLast, true)
	slices.SortStableFunc(out, func(a, b Drift) int {
		switch {
		case a.Bytes < b.Bytes:
			return -1
		case a.Bytes > b.Bytes:
			return 1
		}
		return 0
	})
	return out
}

// WriteDrift prints the [sizes] table: live buffers per size class, first sample ->
// last, the classes that changed marked.
func (r *Run) WriteDrift(out io.Writer) {
	fmt.Fprintf(out, "[sizes] live buffers by size class (first sample -> last sample)\n")
	for _, d := range r.Drift() {
		mark := ""
		if d.Last-d.First != 0 {
			mark = "  <- drift"
		}
		fmt.Fprintf(out, "  %10s %9d -> %9d  %+9d%s\n", SizeName(d.Bytes), d.First, d.Last, d.Last-d.First, mark)
	}
}

// SizeName is a power-of-two size class's name: "64 KiB".
func SizeName(b int64) string {
	switch {
	case b >= 1<<30:
		return fmt.Sprintf("%d GiB", b>>30)
	case b >= 1<<20:
		return fmt.Sprintf("%d MiB", b>>20)
	case b >= 1<<10:
		return fmt.Sprintf("%d KiB", b>>10)
	}
	return fmt.Sprintf("%d B", b)
}

// HostPerLink is the Go heap added per live buffer gained between the first and last
// sample: the host-side cost of one dead link (0 when fewer than 100 buffers grew).
func (r *Run) HostPerLink() float64 {
	if len(r.Samples) < 2 {
		return 0
	}
	a, b := r.Samples[0], r.Samples[len(r.Samples)-1]
	if b.Live-a.Live < 100 {
		return 0
	}
	return (b.HeapMB - a.HeapMB) * (1 << 20) / float64(b.Live-a.Live)
}

// WriteHost prints the [host] line when the run grew: the Go heap per dead link.
func (r *Run) WriteHost(out io.Writer) {
	if per := r.HostPerLink(); per > 0 {
		a, b := r.Samples[0], r.Samples[len(r.Samples)-1]
		fmt.Fprintf(out, "[host] Go heap %.1fMB -> %.1fMB for %s more live buffers: ~%.0f bytes of graph per dead link (MLX: ~2.7 KB)\n",
			a.HeapMB, b.HeapMB, Comma(b.Live-a.Live), per)
	}
}
