package repro

import (
	"math"

	"github.com/ingotml/ingot/graph"
)

// CensusReport is the census's verdict: the sites whose pending nodes grow with tokens.
type CensusReport struct {
	Growing []CensusSite `json:"growing_sites"`
}

// CensusSite is one growing site.
type CensusSite struct {
	Site  string  `json:"site"`            // "cache/lazy.go:NN pkg.Func"
	Op    string  `json:"op"`              // the pending nodes' op
	Slope float64 `json:"slope_per_token"` // nodes per token, rounded to 3 digits
	Nodes int     `json:"nodes"`           // pending nodes at the last sample
}

// censusMinSlope is the repro's bar for a growing site, in nodes/token.
const censusMinSlope = 0.5

// census follows the graph's census across a run's samples.
type census struct {
	g *graph.Graph
	t *graph.CensusTracker
}

func startCensus(g *graph.Graph) *census {
	g.EnableCensus()
	return &census{g: g, t: graph.NewCensusTracker()}
}

// take is called right after a sample (the graph is synchronized): it records the
// census at tok and returns its rows, most nodes first.
func (c *census) take(tok int) []graph.CensusSite {
	sites := c.g.Census()
	c.t.Add(tok, sites)
	return sites
}

// report is the growing sites so far.
func (c *census) report() *CensusReport {
	r := &CensusReport{Growing: []CensusSite{}}
	for _, s := range c.t.Growing(censusMinSlope) {
		r.Growing = append(r.Growing, CensusSite{Site: s.Site, Op: s.Op, Slope: round(s.Slope, 3), Nodes: s.Nodes})
	}
	return r
}

func round(x float64, digits int) float64 {
	p := math.Pow(10, float64(digits))
	return math.Round(x*p) / p
}
