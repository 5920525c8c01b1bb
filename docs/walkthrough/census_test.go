package walkthrough_test

import (
	"fmt"
	"runtime"
	"strings"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/generate"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/tensor"
)

// tally is bookkeeping in the style of the GDN cache: two int32 arrays moved every
// step, one of which something reads.
type tally struct{ read, unread tensor.Array }

func (t *tally) step() {
	tensor.Assign(&t.read, tensor.AddScalar(t.read, 1))
	tensor.Assign(&t.unread, tensor.AddScalar(t.unread, 1)) // nothing ever reads this
}

// Example_censusOwnCode is page 7: the census names the line that grows a dead chain.
func Example_censusOwnCode() {
	g := graph.NewCPU(graph.Options{})
	g.EnableCensus() // before the nodes of interest are created
	t := &tally{}
	tensor.Assign(&t.read, tensor.FromInt32(g, []int32{0}, 1))
	tensor.Assign(&t.unread, tensor.FromInt32(g, []int32{0}, 1))

	tracker := graph.NewCensusTracker()
	for step := 1; step <= 40; step++ {
		t.step()
		if err := tensor.Eval(t.read); err != nil { // the program reads one of them
			panic(err)
		}
		if step%10 == 0 {
			live(g) // synchronize before the census
			sites := g.Census()
			tracker.Add(step, sites)
			for _, s := range sites {
				fmt.Printf("step %d: %d pending %s pinning %d buffers (%+d) at %s\n",
					step, s.Nodes, s.Op, s.Buffers, s.Growth, s.Site)
			}
		}
	}
	for _, s := range tracker.Growing(0.5) {
		fmt.Printf("growing: %.2f nodes/step %s at %s\n", s.Slope, s.Op, s.Site)
	}
	runtime.KeepAlive(t)
	// Output:
	// step 10: 10 pending binary_add pinning 11 buffers (+10) at walkthrough/census_test.go:20 walkthrough_test.(*tally).step
	// step 20: 20 pending binary_add pinning 21 buffers (+10) at walkthrough/census_test.go:20 walkthrough_test.(*tally).step
	// step 30: 30 pending binary_add pinning 31 buffers (+10) at walkthrough/census_test.go:20 walkthrough_test.(*tally).step
	// step 40: 40 pending binary_add pinning 41 buffers (+10) at walkthrough/census_test.go:20 walkthrough_test.(*tally).step
	// growing: 1.00 nodes/step binary_add at walkthrough/census_test.go:20 walkthrough_test.(*tally).step
}

// censusRun decodes 40 tokens of one request with the census on and returns the sites
// that grow with tokens.
func censusRun(policy cache.Policy) []graph.GrowingSite {
	g, m := tinyModel()
	g.EnableCensus()
	b := generate.NewBatchGenerator(m, policy, 0)
	if err := b.Insert(generate.Request{ID: 0, Prompt: prompt, MaxTokens: 1000}); err != nil {
		panic(err)
	}
	tracker := graph.NewCensusTracker()
	for n := 0; n < 40; {
		toks, err := b.Next()
		if err != nil {
			panic(err)
		}
		if len(toks) > 0 {
			n += len(toks)
			if n%5 == 0 {
				live(g)
				tracker.Add(n, g.Census())
			}
		}
	}
	runtime.KeepAlive(b)
	return tracker.Growing(0.5)
}

// withoutLine drops the line number from a census site ("dir/file.go:123 pkg.Func"),
// so this example does not change whenever cache/ is edited.
func withoutLine(site string) string {
	file, fn, _ := strings.Cut(site, " ")
	if i := strings.LastIndexByte(file, ':'); i >= 0 {
		file = file[:i]
	}
	return file + " " + fn
}

// Example_censusModel: the census on the tiny model's batch decode.
func Example_censusModel() {
	for _, p := range []cache.Policy{cache.Lazy, cache.Eager} {
		growing := censusRun(p)
		if len(growing) == 0 {
			fmt.Printf("%s: no site grows with tokens\n", p)
		}
		for _, s := range growing {
			fmt.Printf("%s: %.2f nodes/token %s at %s (%d pending)\n", p, s.Slope, s.Op, withoutLine(s.Site), s.Nodes)
		}
	}
	// Output:
	// lazy: 3.00 nodes/token binary_sub at cache/lazy.go cache.(*lazyField).sub (124 pending)
	// eager: no site grows with tokens
}
