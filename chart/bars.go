package chart

import (
	"fmt"
	"math"

	"github.com/ingotml/ingot/predict"
)

// Bars is a grouped bar chart of two counts per category: live buffers per size
// class at a run's first sample and at its latest.
type Bars struct {
	Title       string
	Labels      []string // one per category, left to right
	First, Last []int    // the counts, one per category
	FirstName   string   // legend of First ("first sample")
	LastName    string   // legend of Last ("now")
}

// Bar chart geometry (pixels).
const barsW, barsH, barsLeft, barsBottom, barsTop = 900.0, 300.0, 90.0, 50.0, 50.0

// SVG draws b. Counts grow fast for the leaking class, so the bars are on a log scale
// (log10(1 + count)): a class of 5 and one of 500,000 are both visible.
func (b Bars) SVG() []byte {
	d := newSVG(barsW, barsH)
	d.text(barsLeft, 28, b.Title, "start", black, 16, true, false)
	n := len(b.Labels)
	maxV := 1.0
	for i := range n {
		maxV = math.Max(maxV, math.Max(float64(b.First[i]), float64(b.Last[i])))
	}
	top := math.Log10(1 + maxV)
	base := barsH - barsBottom
	py := func(v int) float64 { return base - math.Log10(1+float64(v))/top*(base-barsTop) }
	d.line(barsLeft, base, barsW-right, base, black, 1, nil)
	for _, v := range []int{1, 10, 100, 1000, 10000, 100000, 1000000} {
		if float64(v) > maxV*1.001 {
			break
		}
		d.line(barsLeft, py(v), barsW-right, py(v), gridGrey, 1, nil)
		d.text(barsLeft-6, py(v)+4, predict.Comma(v), "end", black, 13, false, false)
	}
	slot := (barsW - right - barsLeft) / math.Max(1, float64(n))
	bw := math.Min(28, slot*0.38)
	for i := range n {
		x := barsLeft + slot*float64(i) + slot/2
		for j, v := range []int{b.First[i], b.Last[i]} {
			col := Colors[2]
			if j == 1 {
				col = Colors[0]
			}
			bx := x - bw + float64(j)*bw
			d.rect(bx, py(v), bw-1, base-py(v), col)
		}
		if b.Last[i] != b.First[i] {
			d.text(x, py(max(b.First[i], b.Last[i]))-5, fmt.Sprintf("%+d", b.Last[i]-b.First[i]), "middle", Colors[0], 12, true, false)
		}
		d.text(x, base+18, b.Labels[i], "middle", black, 12, false, false)
	}
	d.rect(barsW-300, 16, 12, 12, Colors[2])
	d.text(barsW-284, 27, b.FirstName, "start", black, 13, false, false)
	d.rect(barsW-160, 16, 12, 12, Colors[0])
	d.text(barsW-144, 27, b.LastName, "start", black, 13, false, false)
	return d.bytes()
}
