package main

import (
	"fmt"
	"io"

	"github.com/ingotml/ingot/graph"
)

// censusTracker prints the top pending-node sites at each report and finds, at the
// end, the sites whose count grows linearly with tokens: the dead chains.
type censusTracker struct {
	g *graph.Graph
	t *graph.CensusTracker
}

// censusReport is the census part of the JSON report.
type censusReport struct {
	Growing []censusSite `json:"growing_sites"`
}

type censusSite struct {
	Site  string  `json:"site"`
	Op    string  `json:"op"`
	Slope float64 `json:"slope_per_token"`
	Nodes int     `json:"nodes"`
}

func startCensus(g *graph.Graph) *censusTracker {
	g.EnableCensus()
	return &censusTracker{g: g, t: graph.NewCensusTracker()}
}

// report is called right after a sample (the graph is synchronized).
func (c *censusTracker) report(out io.Writer, tok int) {
	sites := c.g.Census()
	c.t.Add(tok, sites)
	for i, s := range sites {
		if i == 3 || s.Nodes == 0 {
			break
		}
		fmt.Fprintf(out, "  [census] %7d pending %-14s pinning %7d buffers (%+d) at %s\n", s.Nodes, s.Op, s.Buffers, s.Growth, s.Site)
	}
}

// finish returns the growing sites (slope above 0.5 nodes/token, the repro's default bar).
func (c *censusTracker) finish() *censusReport {
	r := &censusReport{Growing: []censusSite{}}
	for _, s := range c.t.Growing(0.5) {
		r.Growing = append(r.Growing, censusSite{Site: s.Site, Op: s.Op, Slope: round(s.Slope, 3), Nodes: s.Nodes})
	}
	return r
}

func printCensus(out io.Writer, r *result) {
	if r.census == nil {
		return
	}
	if len(r.census.Growing) == 0 {
		fmt.Fprintf(out, "[census] no site grows with tokens: nothing is leaking\n")
		return
	}
	fmt.Fprintf(out, "[census] sites whose unevaluated nodes grow with tokens (the dead chains):\n")
	for _, s := range r.census.Growing {
		fmt.Fprintf(out, "  %+8.2f nodes/token  %-12s %s  (%d live)\n", s.Slope, s.Op, s.Site, s.Nodes)
	}
}
