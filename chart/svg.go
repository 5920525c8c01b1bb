package chart

import (
	"fmt"
	"html"
	"strings"
)

// svg accumulates an SVG document. Coordinates are pixels from the top left.
type svg struct{ b strings.Builder }

func newSVG(w, h float64) *svg {
	c := &svg{}
	fmt.Fprintf(&c.b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="13">`+"\n", w, h, w, h)
	fmt.Fprintf(&c.b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	return c
}

func dashAttr(dash []float64) string {
	if len(dash) == 0 {
		return ""
	}
	return fmt.Sprintf(` stroke-dasharray="%g %g"`, dash[0], dash[1])
}

func widthAttr(w float64) string {
	if w == 1 {
		return ""
	}
	return fmt.Sprintf(` stroke-width="%g"`, w)
}

func (c *svg) line(x1, y1, x2, y2 float64, col string, width float64, dash []float64) {
	fmt.Fprintf(&c.b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="%s"%s%s/>`+"\n",
		x1, y1, x2, y2, col, widthAttr(width), dashAttr(dash))
}

func (c *svg) polyline(pts [][2]float64, col string, width float64, dash []float64) {
	ps := make([]string, len(pts))
	for i, p := range pts {
		ps[i] = fmt.Sprintf("%.1f,%.1f", p[0], p[1])
	}
	fmt.Fprintf(&c.b, `<polyline fill="none" stroke="%s"%s%s points="%s"/>`+"\n", col, widthAttr(width), dashAttr(dash), strings.Join(ps, " "))
}

func (c *svg) rect(x, y, w, h float64, col string) {
	fmt.Fprintf(&c.b, `<rect x="%.1f" y="%.1f" width="%g" height="%g" fill="%s"/>`+"\n", x, y, w, h, col)
}

// text draws s with its baseline at y; anchor is "start", "middle" or "end"; vertical
// text reads bottom to top, centred on (x, y).
func (c *svg) text(x, y float64, s, anchor string, col string, size float64, bold, vertical bool) {
	attrs := ""
	if anchor != "start" {
		attrs += fmt.Sprintf(` text-anchor="%s"`, anchor)
	}
	if col != black {
		attrs += fmt.Sprintf(` fill="%s"`, col)
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

func (c *svg) bytes() []byte { return []byte(c.b.String() + "</svg>\n") }
