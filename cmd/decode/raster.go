package main

import (
	"bytes"
	"image"
	"image/color"
	"image/png"
	"math"
	"strings"
)

// rasterCanvas draws the chart into an RGBA image and encodes it as PNG. Text uses a
// built-in 5x7 bitmap font (upper case; no font files are needed).
type rasterCanvas struct{ img *image.RGBA }

func newRaster(w, h int) *rasterCanvas {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := range img.Pix {
		img.Pix[i] = 0xff // white, opaque
	}
	return &rasterCanvas{img: img}
}

// dot paints a width x width square centred near (x, y).
func (c *rasterCanvas) dot(x, y float64, col color.RGBA, width int) {
	x0, y0 := int(math.Round(x))-width/2, int(math.Round(y))-width/2
	for dy := range width {
		for dx := range width {
			c.img.SetRGBA(x0+dx, y0+dy, col)
		}
	}
}

// segment draws one straight line; phase carries the dash pattern across the
// segments of a polyline.
func (c *rasterCanvas) segment(x1, y1, x2, y2 float64, col color.RGBA, width float64, dash []float64, phase *float64) {
	n := math.Max(math.Abs(x2-x1), math.Abs(y2-y1))
	steps := max(int(math.Ceil(n)), 1)
	stepLen := math.Hypot(x2-x1, y2-y1) / float64(steps)
	for i := 0; i <= steps; i++ {
		t := float64(i) / float64(steps)
		on := true
		if len(dash) == 2 {
			on = math.Mod(*phase, dash[0]+dash[1]) < dash[0]
		}
		if on {
			c.dot(x1+t*(x2-x1), y1+t*(y2-y1), col, max(int(width), 1))
		}
		if i < steps {
			*phase += stepLen
		}
	}
}

func (c *rasterCanvas) line(x1, y1, x2, y2 float64, col color.RGBA, width float64, dash []float64) {
	var phase float64
	c.segment(x1, y1, x2, y2, col, width, dash, &phase)
}

func (c *rasterCanvas) polyline(pts [][2]float64, col color.RGBA, width float64, dash []float64) {
	var phase float64
	for i := 1; i < len(pts); i++ {
		c.segment(pts[i-1][0], pts[i-1][1], pts[i][0], pts[i][1], col, width, dash, &phase)
	}
	if len(pts) == 1 {
		c.dot(pts[0][0], pts[0][1], col, 3)
	}
}

func (c *rasterCanvas) rect(x, y, w, h float64, col color.RGBA) {
	for yy := int(y); yy < int(y+h); yy++ {
		for xx := int(x); xx < int(x+w); xx++ {
			c.img.SetRGBA(xx, yy, col)
		}
	}
}

// Glyph cell: 5x7 pixels plus one column of spacing, scaled 2x for 13-16 px text.
const glyphW, glyphH, glyphScale = 5, 7, 2

func (c *rasterCanvas) text(x, y float64, s, anchor string, col color.RGBA, size float64, bold, vertical bool) {
	s = strings.ToUpper(s)
	width := float64(len(s) * (glyphW + 1) * glyphScale)
	u0 := 0.0
	switch anchor {
	case "middle":
		u0 = -width / 2
	case "end":
		u0 = -width
	}
	// (u, v): position along the text and down from the glyph's top; the baseline is
	// at v = glyphH*glyphScale.
	put := func(u, v float64) {
		if vertical { // rotated -90 degrees about (x, y): the text reads upwards
			c.rect(x+v-glyphH*glyphScale/2, y-u, glyphScale, glyphScale, col)
			return
		}
		c.rect(x+u, y+v-glyphH*glyphScale, glyphScale, glyphScale, col)
	}
	for i, r := range s {
		g, ok := font[r]
		if !ok {
			g = font['?']
		}
		for row := range glyphH {
			for colI := range glyphW {
				if g[row*glyphW+colI] != '#' {
					continue
				}
				u := u0 + float64((i*(glyphW+1)+colI)*glyphScale)
				put(u, float64(row*glyphScale))
				if bold {
					put(u+1, float64(row*glyphScale))
				}
			}
		}
	}
}

func (c *rasterCanvas) bytes() []byte {
	var b bytes.Buffer
	_ = png.Encode(&b, c.img) // an in-memory RGBA image always encodes
	return b.Bytes()
}

// font is a 5x7 bitmap font: 35 cells per glyph, row by row, '#' set.
var font = map[rune]string{
	'A': ".###.#...##...#######...##...##...#", 'B': "####.#...##...#####.#...##...#####.",
	'C': ".###.#...##....#....#....#...#.###.", 'D': "####.#...##...##...##...##...#####.",
	'E': "######....#....####.#....#....#####", 'F': "######....#....####.#....#....#....",
	'G': ".###.#...##....#.####...##...#.####", 'H': "#...##...##...#######...##...##...#",
	'I': ".###...#....#....#....#....#...###.", 'J': "..###...#....#....#....#.#..#..##..",
	'K': "#...##..#.#.#..##...#.#..#..#.#...#", 'L': "#....#....#....#....#....#....#####",
	'M': "#...###.###.#.##.#.##...##...##...#", 'N': "#...##...###..##.#.##..###...##...#",
	'O': ".###.#...##...##...##...##...#.###.", 'P': "####.#...##...#####.#....#....#....",
	'Q': ".###.#...##...##...##.#.##..#..##.#", 'R': "####.#...##...#####.#.#..#..#.#...#",
	'S': ".#####....#.....###.....#....#####.", 'T': "#####..#....#....#....#....#....#..",
	'U': "#...##...##...##...##...##...#.###.", 'V': "#...##...##...##...##...#.#.#...#..",
	'W': "#...##...##...##.#.##.#.##.#.#.#.#.", 'X': "#...##...#.#.#...#...#.#.#...##...#",
	'Y': "#...##...#.#.#...#....#....#....#..", 'Z': "#####....#...#...#...#...#....#####",
	'0': ".###.#...##..###.#.###..##...#.###.", '1': "..#...##....#....#....#....#...###.",
	'2': ".###.#...#....#...#...#...#...#####", '3': "#####...#...#.....#.....##...#.###.",
	'4': "...#...##..#.#.#..#.#####...#....#.", '5': "######....####.....#....##...#.###.",
	'6': "..##..#...#....####.#...##...#.###.", '7': "#####....#...#...#...#....#....#...",
	'8': ".###.#...##...#.###.#...##...#.###.", '9': ".###.#...##...#.####....#...#..##..",
	' ': "...................................", '(': "...#...#...#....#....#.....#.....#.",
	')': ".#.....#.....#....#....#...#...#...", ',': ".....................##....#...#...",
	'.': "..........................##...##..", '+': ".......#....#..#####..#....#.......",
	'-': "...............#####...............", '/': ".........#...#...#...#...#.........",
	'~': "...........#...#.#.#...#...........", ':': "......##...##........##...##.......",
	'=': "..........#####.....#####..........", '%': "##...##..#...#...#...#...#..##...##",
	'_': "..............................#####", '\'': "..#....#...#.......................",
	'<': "...#...#...#...#.....#.....#.....#.", '>': ".#.....#.....#.....#...#...#...#...",
	'?': ".###.#...#....#...#...#.........#..",
}
