package graph_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/tensor"
)

// line returns the line number it is called from.
func line() int {
	_, _, l, _ := runtime.Caller(1)
	return l
}

// fakeCache is the GDN cache in miniature: one int32 metadata array per layer.
type fakeCache struct{ lp tensor.Array }

var advanceLine int

// advance is the cache's `left_padding -= 1`: a new pending Sub on a fresh scalar.
func (c *fakeCache) advance() { c.lp, advanceLine = tensor.SubScalar(c.lp, 1), line() }

func advanceSite() string {
	return fmt.Sprintf("graph/census_test.go:%d graph_test.(*fakeCache).advance", advanceLine)
}

func newCaches(g *graph.Graph, n int) []*fakeCache {
	cs := make([]*fakeCache, n)
	for i := range cs {
		cs[i] = &fakeCache{lp: tensor.FromInt32(g, []int32{0, 0}, 2)}
	}
	return cs
}

// step advances every cache, then evaluates the lp of the first `evaluated` caches only
// (the model reads layer 0's padding for its mask and nothing reads the others).
func step(t *testing.T, caches []*fakeCache, evaluated int) {
	t.Helper()
	for _, c := range caches {
		c.advance()
	}
	lps := make([]tensor.Array, evaluated)
	for i := range lps {
		lps[i] = caches[i].lp
	}
	require.NoError(t, tensor.Eval(lps...))
}

func census(t *testing.T, g *graph.Graph) []graph.CensusSite {
	t.Helper()
	require.NoError(t, g.Synchronize())
	return g.Census()
}

func TestCensusNamesDeadChainSite(t *testing.T) {
	for _, opt := range []graph.Options{{Sync: true}, {}} {
		g := graph.NewCPU(opt)
		g.EnableCensus()
		caches := newCaches(g, 3)
		got := census(t, g)
		require.NotNil(t, got)
		require.Empty(t, got, "host data is never pending")

		steps := 0
		for _, n := range []int{5, 10, 0, 20} {
			for i := 0; i < n; i++ {
				step(t, caches, 1)
			}
			steps += n
			require.Equal(t, []graph.CensusSite{{
				Site:    advanceSite(),
				Op:      "binary_sub",
				Nodes:   2 * steps,   // caches 1 and 2: one pending Sub per step each
				Buffers: 2*steps + 2, // one scalar per link, plus each chain's origin
				Growth:  2 * n,       // since the previous report
			}}, census(t, g))
			// The allocator agrees: cache 0's evaluated lp plus what the chains pin.
			require.Equal(t, 1+2*steps+2, g.Allocator().LiveBufferCount())
		}
		v, err := caches[0].lp.Int32s()
		require.NoError(t, err)
		require.Equal(t, []int32{-35, -35}, v)

		// Reading the dead chains frees them: the row is reported once more as gone.
		require.NoError(t, tensor.Eval(caches[1].lp, caches[2].lp))
		require.Equal(t, []graph.CensusSite{{Site: advanceSite(), Op: "binary_sub", Growth: -70}}, census(t, g))
		require.Empty(t, census(t, g))
		require.Equal(t, 3, g.Allocator().LiveBufferCount())
		runtime.KeepAlive(caches)
	}
}

func TestCensusTrackerSlopeIsCachesMinusOne(t *testing.T) {
	for _, n := range []int{2, 3, 5} {
		g := graph.NewCPU(graph.Options{})
		g.EnableCensus()
		caches := newCaches(g, n)
		tr := graph.NewCensusTracker()
		for tok := 1; tok <= 40; tok++ {
			step(t, caches, 1)
			tr.Add(tok, census(t, g))
		}
		require.Equal(t, []graph.GrowingSite{{
			Site: advanceSite(), Op: "binary_sub", Slope: float64(n - 1), Nodes: 40 * (n - 1),
		}}, tr.Growing(0.5), "caches=%d", n)
	}
}

func TestCensusAllEvaluatedIsFlat(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	g.EnableCensus()
	caches := newCaches(g, 3)
	tr := graph.NewCensusTracker()
	for tok := 1; tok <= 40; tok++ {
		step(t, caches, len(caches))
		sites := census(t, g)
		require.NotNil(t, sites)
		require.Empty(t, sites)
		tr.Add(tok, sites)
	}
	require.Equal(t, 3, g.Allocator().LiveBufferCount())
	runtime.KeepAlive(caches)
	require.Empty(t, tr.Growing(0.5))
	require.Empty(t, tr.Growing(-1), "no row was ever seen")
}

func TestCensusOff(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	require.False(t, g.CensusEnabled())
	caches := newCaches(g, 3)
	for i := 0; i < 10; i++ {
		step(t, caches, 1)
	}
	require.Nil(t, census(t, g))
	g.EnableCensus()
	require.True(t, g.CensusEnabled())
	// Nodes made before the census are not counted; a link on a pending pre-census node
	// pins only its own scalar, since its pending input holds no buffer.
	step(t, caches, 1)
	require.Equal(t, []graph.CensusSite{{
		Site: advanceSite(), Op: "binary_sub", Nodes: 2, Buffers: 2, Growth: 2,
	}}, census(t, g))
	g.EnableCensus() // a no-op: the baseline survives
	step(t, caches, 1)
	require.Equal(t, []graph.CensusSite{{
		Site: advanceSite(), Op: "binary_sub", Nodes: 4, Buffers: 4, Growth: 2,
	}}, census(t, g))
	runtime.KeepAlive(caches)
}

var negLine int

// neg is generic so that the census names a generic frame.
func neg[T any](x tensor.Array) tensor.Array { negLine = line(); return tensor.Neg(x) }

func TestCensusRowsByOpAndOrder(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	g.EnableCensus()
	x := tensor.FromFloat32(g, seq(6), 6)
	var held []tensor.Array
	var chainLine, sumLine, viewLine int
	for i := 0; i < 3; i++ {
		held, chainLine = append(held, tensor.Exp(tensor.Neg(x))), line()
		held, sumLine = append(held, tensor.Add(x, x)), line()
	}
	held, viewLine = append(held, tensor.Reshape(tensor.Exp(x), 2, 3)), line()
	held = append(held, neg[int](x))
	site := func(l int, fn string) string { return fmt.Sprintf("graph/census_test.go:%d graph_test.%s", l, fn) }
	test := "TestCensusRowsByOpAndOrder"
	require.Equal(t, []graph.CensusSite{
		// exp's input is the pending neg: no buffer; neg and add pin x, once per row.
		{Site: site(chainLine, test), Op: "unary_exp", Nodes: 3, Buffers: 0, Growth: 3},
		{Site: site(chainLine, test), Op: "unary_neg", Nodes: 3, Buffers: 1, Growth: 3},
		{Site: site(sumLine, test), Op: "binary_add", Nodes: 3, Buffers: 1, Growth: 3},
		{Site: site(negLine, "neg[...]"), Op: "unary_neg", Nodes: 1, Buffers: 1, Growth: 1},
		{Site: site(viewLine, test), Op: "unary_exp", Nodes: 1, Buffers: 1, Growth: 1},
		{Site: site(viewLine, test), Op: "view", Nodes: 1, Buffers: 0, Growth: 1},
	}, census(t, g))
	runtime.KeepAlive(held)
}

func TestCensusTrackerWindow(t *testing.T) {
	tr := graph.NewCensusTracker()
	require.Nil(t, tr.Growing(0))
	// 8 samples: the window is samples[2:7], tokens 20..60.
	for i := 0; i < 8; i++ {
		tok := 10 * i
		leak := 3 * tok
		switch {
		case i < 2:
			leak = 1000 // warm-up, ignored
		case i == 7:
			leak = 0 // last sample, ignored by the slope but reported as Nodes
		}
		sites := []graph.CensusSite{
			{Site: "a.go:1 a.F", Op: "binary_sub", Nodes: leak},
			{Site: "b.go:2 b.G", Op: "unary_exp", Nodes: 5},
		}
		if i%2 == 0 { // present in every other sample: 0 in between
			sites = append(sites, graph.CensusSite{Site: "c.go:3 c.H", Op: "view", Nodes: 20})
		}
		if i == 7 {
			sites = append(sites, graph.CensusSite{Site: "d.go:4 d.I", Op: "copy", Nodes: 9})
		}
		tr.Add(tok, sites)
	}
	require.Equal(t, []graph.GrowingSite{{Site: "a.go:1 a.F", Op: "binary_sub", Slope: 3, Nodes: 0}}, tr.Growing(0.5))
	// Window c = 20,0,20,0,20 at tokens 20..60: slope 0.
	require.Equal(t, []graph.GrowingSite{
		{Site: "a.go:1 a.F", Op: "binary_sub", Slope: 3, Nodes: 0},
		{Site: "b.go:2 b.G", Op: "unary_exp", Slope: 0, Nodes: 5},
		{Site: "c.go:3 c.H", Op: "view", Slope: 0, Nodes: 0},
		{Site: "d.go:4 d.I", Op: "copy", Slope: 0, Nodes: 9},
	}, tr.Growing(0))

	two := graph.NewCensusTracker()
	two.Add(1, []graph.CensusSite{{Site: "a", Op: "x", Nodes: 1}})
	two.Add(2, []graph.CensusSite{{Site: "a", Op: "x", Nodes: 2}})
	require.Nil(t, two.Growing(0), "window [0:1] holds one sample")

	flat := graph.NewCensusTracker()
	for i := 0; i < 6; i++ {
		flat.Add(7, []graph.CensusSite{{Site: "a", Op: "x", Nodes: i}})
	}
	require.Nil(t, flat.Growing(0), "all samples at one token: no slope")
}
