package main

import (
	"fmt"
	"html"
	"image/color"
	"strings"
)

// svgCanvas writes the chart as an SVG document.
type svgCanvas struct{ b strings.Builder }

func newSVG(w, h float64) *svgCanvas {
	c := &svgCanvas{}
	fmt.Fprintf(&c.b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="13">`+"\n", w, h, w, h)
	fmt.Fprintf(&c.b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	return c
}

func hex(c color.RGBA) string { return fmt.Sprintf("#%02x%02x%02x", c.R, c.G, c.B) }

func dashAttr(dash []float64) string {
	if len(dash) == 0 {
		return ""
	}
	return fmt.Sprintf(` stroke-dasharray="%g %g"`, dash[0], dash[1])
}

func (c *svgCanvas) line(x1, y1, x2, y2 float64, col color.RGBA, width float64, dash []float64) {
	fmt.Fprintf(&c.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"%s%s/>`+"\n",
		x1, y1, x2, y2, hex(col), widthAttr(width), dashAttr(dash))
}

func widthAttr(w float64) string {
	if w == 1 {
		return ""
	}
	return fmt.Sprintf(` stroke-width="%g"`, w)
}

func (c *svgCanvas) polyline(pts [][2]float64, col color.RGBA, width float64, dash []float64) {
	ps := make([]string, len(pts))
	for i, p := range pts {
		ps[i] = fmt.Sprintf("%.1f,%.1f", p[0], p[1])
	}
	fmt.Fprintf(&c.b, `<polyline fill="none" stroke="%s"%s%s points="%s"/>`+"\n", hex(col), widthAttr(width), dashAttr(dash), strings.Join(ps, " "))
}

func (c *svgCanvas) rect(x, y, w, h float64, col color.RGBA) {
	fmt.Fprintf(&c.b, `<rect x="%.1f" y="%.1f" width="%g" height="%g" fill="%s"/>`+"\n", x, y, w, h, hex(col))
}

func (c *svgCanvas) text(x, y float64, s, anchor string, col color.RGBA, size float64, bold, vertical bool) {
	attrs := ""
	if anchor != "start" {
		attrs += fmt.Sprintf(` text-anchor="%s"`, anchor)
	}
	if col != black {
		attrs += fmt.Sprintf(` fill="%s"`, hex(col))
	}
	if size != 13 {
		attrs += fmt.Sprintf(` font-size="%g"`, size)
	}
	if bold {
		attrs += ` font-weight="bold"`
	}
	if vertical {
		attrs += fmt.Sprintf(` transform="rotate(-90 %.1f %.1f)"`, x, y)
	}
	fmt.Fprintf(&c.b, `<text x="%.1f" y="%.1f"%s>%s</text>`+"\n", x, y, attrs, html.EscapeString(s))
}

func (c *svgCanvas) bytes() []byte { return []byte(c.b.String() + "</svg>\n") }
