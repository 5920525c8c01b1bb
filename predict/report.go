package predict

import (
	"fmt"
	"io"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/nn"
)

// The lines a run prints, shared by cmd/decode and the playground.

// WriteRunModel prints a run's [model] line for the random model of d: source names
// it (its model_type, or "TYPE from PATH"), then its layers, experts and width, the
// cache bookkeeping, the device and the limit with where it came from.
func WriteRunModel(out io.Writer, source string, d *nn.Description, policy cache.Policy, device string, limit int, limitSource string) {
	gdn := nn.CountKinds(d.Kinds, nn.Recurrent)
	fmt.Fprintf(out, "[model] %s: layers=%d (ssm=%d attn=%d) interval=%d experts=%d hidden=%d cache=%s device=%s limit=%d (%s)\n",
		source, len(d.Kinds), gdn, len(d.Kinds)-gdn, Interval(d.Kinds), d.Experts, d.Hidden, policy, device, limit, limitSource)
}

// WriteLine prints the sample's line; host adds the process's RSS and Go heap.
func (s Sample) WriteLine(out io.Writer, host bool) {
	if !host {
		fmt.Fprintf(out, "tok %6d live=%d (+cached=%d = %d) active=%.1fMB cache=%.1fMB\n",
			s.Token, s.Live, s.CacheCount, s.Count, s.ActiveMB, s.CacheMB)
		return
	}
	fmt.Fprintf(out, "tok %6d live=%d (+cached=%d = %d) active=%.1fMB cache=%.1fMB rss=%.1fMB heap=%.1fMB\n",
		s.Token, s.Live, s.CacheCount, s.Count, s.ActiveMB, s.CacheMB, s.RSSMB, s.HeapMB)
}

// BaselineError is a resource limit the model cannot even start under.
type BaselineError struct {
	Source string // what set the limit: "--limit", "the device's resource limit", ...
	Limit  int
	Why    string // what needs more buffer objects than that
}

func (e *BaselineError) Error() string {
	return fmt.Sprintf("%s %d is below this model's baseline: %s (raise the limit)", e.Source, e.Limit, e.Why)
}

// CheckBaseline refuses a limit below p's baseline (a run would crash before its first
// token, and the crash token would be negative); source names the limit.
func (p Prediction) CheckBaseline(source string) error {
	if p.Baseline <= p.Limit {
		return nil
	}
	return &BaselineError{Source: source, Limit: p.Limit, Why: fmt.Sprintf("it needs ~%s buffer objects before its first token", Comma(p.Baseline))}
}
