package chart

import (
	"encoding/xml"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/predict"
)

// TestLines: one polyline per series, the limit and the predicted crash marked, the
// text escaped, and the document well-formed XML.
func TestLines(t *testing.T) {
	c := Lines{Title: "Live <buffers> & tokens", XName: "tokens", Limit: 6000, Series: []Series{
		{Label: "lazy", Points: []Point{{0, 300}, {100, 1300}, {570, 6000}}, Predicted: 570},
		{Label: "eager", Points: []Point{{0, 300}, {570, 300}}},
	}}
	b := string(c.SVG())
	require.True(t, strings.HasPrefix(b, `<svg xmlns="http://www.w3.org/2000/svg" width="900" height="520" viewBox="0 0 900 520"`), b[:90])
	require.True(t, strings.HasSuffix(b, "</svg>\n"))
	require.Equal(t, 2, strings.Count(b, "<polyline"))
	require.Contains(t, b, ">resource limit 6,000</text>")
	require.Contains(t, b, ">predicted crash ~570</text>")
	require.Contains(t, b, ">Live &lt;buffers&gt; &amp; tokens</text>")
	require.Equal(t, 1, strings.Count(b, `stroke-dasharray="2 3"`), "one predicted-crash line")
	require.Equal(t, 1, strings.Count(b, `stroke-dasharray="6 4"`), "one limit line")
	// The y axis is rounded up above the limit (6,000 x 1.08 -> 8,000), the x axis ends
	// at the last point: the lazy line's last point is at the right edge.
	require.Contains(t, b, ">8,000</text>")
	require.Contains(t, b, `points="90.0,`)
	require.Contains(t, b, "870.0,")
	d := xml.NewDecoder(strings.NewReader(b))
	for {
		_, err := d.Token()
		if err != nil {
			require.Equal(t, "EOF", err.Error())
			break
		}
	}
	require.Equal(t, 1, strings.Count(b, `<polyline fill="none" stroke="#2ca02c"`), "the second series in the second colour")
	c.Series[1].Color = "#123456"
	require.Contains(t, string(c.SVG()), `<polyline fill="none" stroke="#123456"`, "a colour of its own")
	// MinX keeps a live chart's scale: the x axis reaches it with no data there.
	c.MinX = 10000
	require.Contains(t, string(c.SVG()), ">10,000</text>")
}

func TestNiceCeil(t *testing.T) {
	for v, want := range map[float64]float64{0: 1, 1: 1, 7: 8, 538920: 600000, 6480: 8000, 101: 120} {
		require.InDelta(t, want, niceCeil(v), 1e-9, "%v", v)
	}
}

// TestBars: two bars per class, the changed class labelled with its growth.
func TestBars(t *testing.T) {
	b := string(Bars{Title: "sizes", Labels: []string{"16 B", "64 KiB"}, First: []int{5, 152}, Last: []int{4805, 152},
		FirstName: "first sample", LastName: "now"}.SVG())
	require.Equal(t, 4+2, strings.Count(b, "<rect x="), "4 bars and 2 legend keys")
	require.Contains(t, b, ">+4800</text>")
	require.NotContains(t, b, ">+0</text>")
	require.Contains(t, b, ">1,000</text>", "log grid up to the largest count")
	require.NotContains(t, b, ">10,000</text>")
	require.Contains(t, b, ">64 KiB</text>")
}

// TestLinesHugeLimit: a limit near math.MaxInt64 (decode --limit 9223372036854775807
// --plot) draws its axis labels in full: the y axis's top, 1.08 x the limit, is past
// int64 and once converted to math.MinInt64, whose formatting overflowed the stack.
func TestLinesHugeLimit(t *testing.T) {
	for _, limit := range []int{math.MaxInt64, 8e18} {
		c := Lines{Title: "t", XName: "tokens", Limit: limit, Series: []Series{
			{Label: "lazy", Points: []Point{{0, 300}, {100, 1300}}, Predicted: limit / 48},
		}}
		b := string(c.SVG())
		require.Contains(t, b, ">resource limit "+predict.Comma(limit)+"</text>")
		require.Contains(t, b, ">10,000,000,000,000,000,000</text>", "the y axis's top")
		require.NotContains(t, b, ">-")
	}
}
