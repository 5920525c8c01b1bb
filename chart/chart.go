package chart

import (
	"math"

	"github.com/ingotml/ingot/predict"
)

// Point is one sample: X tokens (or completed requests), Y live buffer objects.
type Point struct{ X, Y int }

// Series is one run's line.
type Series struct {
	Label     string  // the legend's text
	Points    []Point // in X order
	Predicted int     // the predicted crash to mark with a dotted line (0: none)
	Color     string  // the line's colour ("": Colors by the series' place)
}

// Lines is a chart of live buffers against tokens.
type Lines struct {
	Title  string
	XName  string // the x axis: "tokens" or "completed requests"
	Limit  int    // the resource limit, drawn dashed
	Series []Series
	// MinX stretches the x axis to at least this much (0: the data's extent), so that
	// a live chart keeps its scale while a run grows.
	MinX int
}

// Geometry (pixels).
const (
	width, height                = 900.0, 520.0
	left, right, top, bottomSide = 90.0, 30.0, 50.0, 60.0
)

// Colours.
const (
	black    = "#000000"
	gridGrey = "#dddddd"
	limitRed = "#cc0000"
)

// Colors are the runs' line colours, in series order.
var Colors = []string{"#d62728", "#2ca02c", "#1f77b4", "#9467bd", "#ff7f0e"}

// SVG draws c.
func (c Lines) SVG() []byte {
	const w, h, bottom = width, height, bottomSide
	d := newSVG(w, h)
	maxX, maxY := math.Max(1, float64(c.MinX)), math.Max(1, float64(c.Limit))
	for _, s := range c.Series {
		for _, p := range s.Points {
			maxX = math.Max(maxX, float64(p.X))
			maxY = math.Max(maxY, float64(p.Y))
		}
		maxX = math.Max(maxX, float64(s.Predicted))
	}
	maxY = niceCeil(maxY * 1.08)
	px := func(x float64) float64 { return left + x/maxX*(w-left-right) }
	py := func(y float64) float64 { return h - bottom - y/maxY*(h-top-bottom) }
	d.text(left, 28, c.Title, "start", black, 16, true, false)
	// Axes with ticks.
	d.line(left, py(0), w-right, py(0), black, 1, nil)
	d.line(left, py(0), left, top, black, 1, nil)
	for i := 0; i <= 5; i++ {
		x := maxX * float64(i) / 5
		y := maxY * float64(i) / 5
		d.text(px(x), py(0)+20, predict.CommaFloat(x), "middle", black, 13, false, false)
		d.text(left-6, py(y)+4, predict.CommaFloat(math.Floor(y)), "end", black, 13, false, false)
		d.line(left, py(y), w-right, py(y), gridGrey, 1, nil)
	}
	d.text((left+w-right)/2, h-15, c.XName, "middle", black, 13, false, false)
	d.text(14, (top+h-bottom)/2, "live buffers", "middle", black, 13, false, true)
	// The resource limit.
	lim := float64(c.Limit)
	d.line(left, py(lim), w-right, py(lim), limitRed, 1, []float64{6, 4})
	d.text(left+8, py(lim)-6, "resource limit "+predict.Comma(c.Limit), "start", limitRed, 13, false, false)
	legendY := top + 0.35*(h-top-bottom) // below the limit line, above the flat runs
	for i, s := range c.Series {
		col := Colors[i%len(Colors)]
		if s.Color != "" {
			col = s.Color
		}
		var pts [][2]float64
		for _, p := range s.Points {
			pts = append(pts, [2]float64{px(float64(p.X)), py(float64(p.Y))})
		}
		var dash []float64
		if i > 0 { // flat runs overlap: dash the later ones so each stays visible
			dash = []float64{float64(4 * max(3-i, 1)), 4}
		}
		d.polyline(pts, col, 2, dash)
		if p := s.Predicted; p > 0 {
			d.line(px(float64(p)), top, px(float64(p)), py(0), col, 1, []float64{2, 3})
			// At the top, clear of the flat runs along the bottom.
			d.text(px(float64(p))-4, top+16, "predicted crash ~"+predict.Comma(p), "end", col, 13, false, false)
		}
		d.rect(left+20, legendY+float64(i)*18, 14, 4, col)
		d.text(left+40, legendY+6+float64(i)*18, s.Label, "start", black, 13, false, false)
	}
	return d.bytes()
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
