package main

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strings"
)

// canvas is what the chart is drawn on: an SVG document or a PNG raster. Coordinates
// are pixels from the top left.
type canvas interface {
	line(x1, y1, x2, y2 float64, c color.RGBA, width float64, dash []float64)
	polyline(pts [][2]float64, c color.RGBA, width float64, dash []float64)
	rect(x, y, w, h float64, c color.RGBA)
	// text draws s with its baseline at y; anchor is "start", "middle" or "end";
	// vertical text reads bottom to top, centred on (x, y).
	text(x, y float64, s string, anchor string, c color.RGBA, size float64, bold, vertical bool)
	bytes() []byte
}

// Chart geometry (pixels).
const (
	chartW, chartH                               = 900.0, 520.0
	chartLeft, chartRight, chartTop, chartBottom = 90.0, 30.0, 50.0, 60.0
)

var (
	black     = color.RGBA{0, 0, 0, 255}
	gridGrey  = color.RGBA{0xdd, 0xdd, 0xdd, 255}
	limitRed  = color.RGBA{0xcc, 0, 0, 255}
	runColors = []color.RGBA{{0xd6, 0x27, 0x28, 255}, {0x2c, 0xa0, 0x2c, 255}, {0x1f, 0x77, 0xb4, 255}, {0x94, 0x67, 0xbd, 255}, {0xff, 0x7f, 0x0e, 255}}
)

// writePlot draws live buffers against tokens (completed requests in server mode) for
// each run, with the resource limit and each leaking run's predicted crash marked: SVG
// for a .svg path, PNG for .png.
func writePlot(path string, runs []*result) error {
	var c canvas = newSVG(chartW, chartH)
	if strings.EqualFold(filepath.Ext(path), ".png") {
		c = newRaster(int(chartW), int(chartH))
	}
	drawChart(c, runs)
	if err := os.WriteFile(path, c.bytes(), 0o644); err != nil {
		return fmt.Errorf("--plot: %w", err)
	}
	return nil
}

func drawChart(c canvas, runs []*result) {
	const w, h, left, right, top, bottom = chartW, chartH, chartLeft, chartRight, chartTop, chartBottom
	unit := runs[0].unit()
	xName := "tokens"
	if unit == "request" {
		xName = "completed requests"
	}
	maxX, maxY := 1.0, 1.0
	for _, r := range runs {
		for _, s := range r.samples {
			maxX = math.Max(maxX, float64(s.Token))
			maxY = math.Max(maxY, float64(s.Live))
		}
		if p := predictedMark(r); p > 0 {
			maxX = math.Max(maxX, float64(p))
		}
		maxY = math.Max(maxY, float64(r.limit))
	}
	maxY = niceCeil(maxY * 1.08)
	px := func(x float64) float64 { return left + x/maxX*(w-left-right) }
	py := func(y float64) float64 { return h - bottom - y/maxY*(h-top-bottom) }
	c.text(left, 28, fmt.Sprintf("Live buffer objects vs %s (ingot cmd/decode)", xName), "start", black, 16, true, false)
	// Axes with ticks.
	c.line(left, py(0), w-right, py(0), black, 1, nil)
	c.line(left, py(0), left, top, black, 1, nil)
	for i := 0; i <= 5; i++ {
		x := maxX * float64(i) / 5
		y := maxY * float64(i) / 5
		c.text(px(x), py(0)+20, comma(int(math.Round(x))), "middle", black, 13, false, false)
		c.text(left-6, py(y)+4, comma(int(y)), "end", black, 13, false, false)
		c.line(left, py(y), w-right, py(y), gridGrey, 1, nil)
	}
	c.text((left+w-right)/2, h-15, xName, "middle", black, 13, false, false)
	c.text(14, (top+h-bottom)/2, "live buffers", "middle", black, 13, false, true)
	// The resource limit.
	lim := float64(runs[0].limit)
	c.line(left, py(lim), w-right, py(lim), limitRed, 1, []float64{6, 4})
	c.text(left+8, py(lim)-6, "resource limit "+comma(int(lim)), "start", limitRed, 13, false, false)
	legendY := top + 0.35*(h-top-bottom) // below the limit line, above the flat runs
	for i, r := range runs {
		col := runColors[i%len(runColors)]
		var pts [][2]float64
		for _, s := range r.samples {
			pts = append(pts, [2]float64{px(float64(s.Token)), py(float64(s.Live))})
		}
		var dash []float64
		if i > 0 { // flat runs overlap: dash the later ones so each stays visible
			dash = []float64{float64(4 * max(3-i, 1)), 4}
		}
		c.polyline(pts, col, 2, dash)
		if p := predictedMark(r); p > 0 {
			c.line(px(float64(p)), top, px(float64(p)), py(0), col, 1, []float64{2, 3})
			c.text(px(float64(p))-4, py(0)-12, "predicted crash ~"+comma(p), "end", col, 13, false, false)
		}
		label := r.label
		if r.crashed {
			label += fmt.Sprintf(" (crashed at %s)", comma(r.crashToken))
		} else if sl, ok := slope(r.samples); ok {
			label += fmt.Sprintf(" (%+.2f/%s)", sl, unit)
		} else {
			label += " (too few samples for a slope)"
		}
		c.rect(left+20, legendY+float64(i)*18, 14, 4, col)
		c.text(left+40, legendY+6+float64(i)*18, label, "start", black, 13, false, false)
	}
}

// predictedMark is the predicted crash token drawn for a lazy decode run (0: none).
func predictedMark(r *result) int {
	if r.unit() != "token" || r.policy.String() != "lazy" {
		return 0
	}
	return r.predictedCrash()
}

// niceCeil rounds v up to a round multiple of a power of ten, so the axis ticks are round.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}
