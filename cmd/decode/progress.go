package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/ingotml/ingot/graph"
)

// progress shows a live status line (tokens, tok/s, live buffers, distance to the
// predicted crash) when stdout is a terminal; report lines clear it first, so they
// are never broken. On a pipe or file it does nothing.
type progress struct {
	out    io.Writer
	on     bool
	r      *result
	begun  time.Time
	last   time.Time
	shown  bool
	period time.Duration
}

func newProgress(out io.Writer) *progress {
	p := &progress{out: out, period: 200 * time.Millisecond}
	if f, ok := out.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.on = true
		}
	}
	return p
}

func (p *progress) start(r *result) {
	p.r = r
	p.begun = time.Now()
	p.last = p.begun
}

// update redraws the status line at most every period.
func (p *progress) update(tokens int, g *graph.Graph) {
	if !p.on {
		return
	}
	now := time.Now()
	if now.Sub(p.last) < p.period {
		return
	}
	p.last = now
	rate := float64(tokens) / now.Sub(p.begun).Seconds()
	live := g.Allocator().LiveBufferCount() // approximate between reports (not synchronized)
	eta := ""
	if c := p.r.PredictedCrash(); c > 0 {
		eta = fmt.Sprintf("  predicted crash in %s tokens", comma(max(c-tokens, 0)))
	}
	fmt.Fprintf(p.out, "\r\x1b[2K  %s tokens  %.0f tok/s  ~%s live buffers%s", comma(tokens), rate, comma(live), eta)
	p.shown = true
}

// clear erases the status line before a report line is printed.
func (p *progress) clear() {
	if p.on && p.shown {
		fmt.Fprint(p.out, "\r\x1b[2K")
		p.shown = false
	}
}
