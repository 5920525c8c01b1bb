package main

import (
	"fmt"
	"io"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/chart"
)

// writePlot writes the SVG chart of live buffers against tokens (completed requests in
// server mode) for each run, with the resource limit and each leaking run's predicted
// crash marked.
func writePlot(path string, runs []*result) error {
	err := writeOut(path, func(w io.Writer) error {
		_, err := w.Write(plotOf(runs).SVG())
		return err
	})
	if err != nil {
		return fmt.Errorf("--plot %s: %w", path, err)
	}
	return nil
}

// plotOf is the chart of runs: one line each, its legend saying how it ended.
func plotOf(runs []*result) chart.Lines {
	unit := runs[0].Unit()
	xName := "tokens"
	if unit == "request" {
		xName = "completed requests"
	}
	c := chart.Lines{Title: fmt.Sprintf("Live buffer objects vs %s (ingot cmd/decode)", xName), XName: xName, Limit: runs[0].Limit}
	for _, r := range runs {
		s := chart.Series{Label: r.Label}
		for _, p := range r.Samples {
			s.Points = append(s.Points, chart.Point{X: p.Token, Y: p.Live})
		}
		if unit == "token" && r.Policy == cache.Lazy {
			s.Predicted = r.PredictedCrash()
		}
		if r.Crashed {
			s.Label += fmt.Sprintf(" (crashed at %s)", comma(r.CrashToken))
		} else if sl, ok := slope(r.Samples); ok {
			s.Label += fmt.Sprintf(" (%+.2f/%s)", sl, unit)
		} else {
			s.Label += " (too few samples for a slope)"
		}
		c.Series = append(c.Series, s)
	}
	return c
}
