package main

import (
	"fmt"
	"math"
	"os"
	"strings"
)

// writePlot draws live buffers against tokens for each run as an SVG chart, with the
// resource limit and each leaking run's predicted crash marked.
func writePlot(path string, runs []*result) error {
	const w, h, left, right, top, bottom = 900.0, 520.0, 90.0, 30.0, 50.0, 60.0
	maxX, maxY := 1.0, 1.0
	for _, r := range runs {
		for _, s := range r.samples {
			maxX = math.Max(maxX, float64(s.Token))
			maxY = math.Max(maxY, float64(s.Live))
		}
		if c := r.predictedCrash(); c > 0 && r.policy.String() == "lazy" {
			maxX = math.Max(maxX, float64(c))
		}
		maxY = math.Max(maxY, float64(r.limit))
	}
	maxY = niceCeil(maxY * 1.08)
	px := func(x float64) float64 { return left + x/maxX*(w-left-right) }
	py := func(y float64) float64 { return h - bottom - y/maxY*(h-top-bottom) }
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="13">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="28" font-size="16" font-weight="bold">Live buffer objects vs decoded tokens (ingot cmd/decode)</text>`+"\n", left)
	// Axes with ticks.
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", left, py(0), w-right, py(0))
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="black"/>`+"\n", left, py(0), left, top)
	for i := 0; i <= 5; i++ {
		x := maxX * float64(i) / 5
		y := maxY * float64(i) / 5
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", px(x), py(0)+20, comma(int(math.Round(x))))
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-6, py(y)+4, comma(int(y)))
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", left, py(y), w-right, py(y))
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">tokens</text>`+"\n", (left+w-right)/2, h-15)
	fmt.Fprintf(&b, `<text x="18" y="%.1f" transform="rotate(-90 18 %.1f)" text-anchor="middle">live buffers</text>`+"\n", (top+h-bottom)/2, (top+h-bottom)/2)
	// The resource limit.
	lim := float64(runs[0].limit)
	fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#c00" stroke-dasharray="6 4"/>`+"\n", left, py(lim), w-right, py(lim))
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#c00" text-anchor="start">resource limit %s</text>`+"\n", left+8, py(lim)-6, comma(int(lim)))
	legendY := top + 0.35*(h-top-bottom) // below the limit line, above the flat runs
	colors := []string{"#d62728", "#2ca02c", "#1f77b4", "#9467bd", "#ff7f0e"}
	for i, r := range runs {
		c := colors[i%len(colors)]
		var pts []string
		for _, s := range r.samples {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(float64(s.Token)), py(float64(s.Live))))
		}
		dash := ""
		if i > 0 { // flat runs overlap: dash the later ones so each stays visible
			dash = fmt.Sprintf(` stroke-dasharray="%d 4"`, 4*(3-i))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2"%s points="%s"/>`+"\n", c, dash, strings.Join(pts, " "))
		if p := r.predictedCrash(); p > 0 && r.policy.String() == "lazy" {
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s" stroke-dasharray="2 3"/>`+"\n", px(float64(p)), top, px(float64(p)), py(0), c)
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="%s" text-anchor="end">predicted crash ~%s</text>`+"\n", px(float64(p))-4, py(0)-12, c, comma(p))
		}
		label := r.label
		if r.crashed {
			label += fmt.Sprintf(" (crashed at %s)", comma(r.crashToken))
		} else {
			label += fmt.Sprintf(" (%+.2f/token)", slope(r.samples))
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="14" height="4" fill="%s"/>`+"\n", left+20, legendY+float64(i)*18, c)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f">%s</text>`+"\n", left+40, legendY+6+float64(i)*18, label)
	}
	b.WriteString("</svg>\n")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("--plot: %w", err)
	}
	return nil
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
