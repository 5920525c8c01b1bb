package main

import (
	"fmt"
	"io"

	"github.com/ingotml/ingot/graph"
)

// printCensusSites prints a sample's top pending-node sites (at most three).
func printCensusSites(out io.Writer, sites []graph.CensusSite) {
	for i, s := range sites {
		if i == 3 || s.Nodes == 0 {
			break
		}
		fmt.Fprintf(out, "  [census] %7d pending %-14s pinning %7d buffers (%+d) at %s\n", s.Nodes, s.Op, s.Buffers, s.Growth, s.Site)
	}
}

// printCensus prints the sites whose pending nodes grew with tokens: the dead chains.
func printCensus(out io.Writer, r *result) {
	if r.Census == nil {
		return
	}
	if len(r.Census.Growing) == 0 {
		fmt.Fprintf(out, "[census] no site grows with tokens: nothing is leaking\n")
		return
	}
	fmt.Fprintf(out, "[census] sites whose unevaluated nodes grow with tokens (the dead chains):\n")
	for _, s := range r.Census.Growing {
		fmt.Fprintf(out, "  %+8.2f nodes/token  %-12s %s  (%d live)\n", s.Slope, s.Op, s.Site, s.Nodes)
	}
}
