package walkthrough_test

import (
	"fmt"
	"runtime"
	"slices"

	"github.com/ingotml/ingot/alloc"
	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/generate"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn/qwen35"
	"github.com/ingotml/ingot/tensor"
)

// evalWhen is when the driver evaluates every array the caches hold (their State: since
// mlx-lm PR #1632 that includes left_padding and lengths). It is the driver's choice,
// not the cache's, so it lives here rather than as a third cache.Policy.
type evalWhen int

const (
	atPrefill evalWhen = iota // mlx-lm main: prompt processing evaluates the state, the decode step only tokens
	everyStep                 // a fix by evaluation: the state after every step
	never                     // the eager fix: nothing to evaluate
)

// driver is one way to run the batch path: a bookkeeping policy and when state is
// evaluated.
type driver struct {
	name   string
	policy cache.Policy
	when   evalWhen
}

var drivers = []driver{
	{"mlx-lm 0.31.3: lazy, metadata never evaluated", cache.Lazy, never},
	{"mlx-lm main: lazy, state evaluated at prefill", cache.Lazy, atPrefill},
	{"lazy, state evaluated every step", cache.Lazy, everyStep},
	{"eager, state never evaluated", cache.Eager, never},
}

// upstreamRun decodes n tokens of one request through the batch generator under d. It
// returns the tokens, the live count after each token and how many times it evaluated
// the cache state.
func upstreamRun(g *graph.Graph, m *qwen35.Model, d driver, n int) (toks []int32, lives []int, evals int) {
	b := generate.NewBatchGenerator(m, d.policy, 0)
	if err := b.Insert(generate.Request{ID: 0, Prompt: prompt, MaxTokens: n + 1}); err != nil {
		panic(err)
	}
	for len(toks) < n {
		out, err := b.Next() // the first call prefills (no token); each later one emits one
		if err != nil {
			panic(err)
		}
		if d.when == everyStep || (d.when == atPrefill && len(out) == 0) {
			var state []tensor.Array
			for _, c := range b.Caches() {
				state = append(state, c.State()...)
			}
			if err := tensor.Eval(state...); err != nil {
				panic(err)
			}
			evals++
		}
		for _, t := range out {
			toks = append(toks, t.Token)
			lives = append(lives, live(g))
		}
	}
	runtime.KeepAlive(b)
	return toks, lives, evals
}

// upstreamTable runs every driver for n tokens on a fresh repro model of that shape and
// prints the live counts at the report tokens, the growth per token from the second
// report token to the last, and the number of state evaluations. It returns mlx-lm
// main's growth per token.
func upstreamTable(layers, interval, n int, report []int) float64 {
	var first []int32
	var mainSlope float64
	same := true
	for i, d := range drivers {
		g, m := reproModel(layers, interval, alloc.DefaultResourceLimit)
		if i == 0 {
			fmt.Printf("%d layers, interval %d (%d GDN); live buffers at tokens %v:\n", layers, interval, m.Config().NumGDN(), report)
		}
		toks, lives, evals := upstreamRun(g, m, d, n)
		var at []int
		for _, t := range report {
			at = append(at, lives[t-1])
		}
		from, to := report[1], report[len(report)-1]
		slope := float64(lives[to-1]-lives[from-1]) / float64(to-from)
		fmt.Printf("  %-46s %v %+6.2f/token, %2d evaluations\n", d.name, at, slope, evals)
		switch {
		case i == 0:
			first = toks
		case d.when == atPrefill:
			mainSlope = slope
		}
		same = same && slices.Equal(toks, first)
	}
	fmt.Printf("same %d tokens under all four: %v\n", n, same)
	return mainSlope
}

// Example_upstreamMain is page 9: mlx-lm main puts the metadata into the cache state
// and evaluates the state while it processes the prompt, never in the decode step, so
// the dead chains still grow by GDN layers - 1 per token. Evaluating the state every
// step keeps the count flat; the eager bookkeeping keeps it flat with no evaluation.
func Example_upstreamMain() {
	upstreamTable(6, 3, 30, []int{1, 10, 20, 30})
	// Output:
	// 6 layers, interval 3 (4 GDN); live buffers at tokens [1 10 20 30]:
	//   mlx-lm 0.31.3: lazy, metadata never evaluated  [147 174 204 234]  +3.00/token,  0 evaluations
	//   mlx-lm main: lazy, state evaluated at prefill  [141 168 198 228]  +3.00/token,  1 evaluations
	//   lazy, state evaluated every step               [135 135 135 135]  +0.00/token, 31 evaluations
	//   eager, state never evaluated                   [127 127 127 127]  +0.00/token,  0 evaluations
	// same 30 tokens under all four: true
}

// Example_upstreamIssue1845: the shape of mlx-lm issue #1845 (48 layers, a full
// attention layer every 4th), and the token at which the slope alone uses up the limit.
func Example_upstreamIssue1845() {
	slope := upstreamTable(48, 4, 12, []int{1, 4, 8, 12})
	fmt.Printf("%d / %.0f = %d tokens\n", alloc.DefaultResourceLimit, slope, int(float64(alloc.DefaultResourceLimit)/slope))
	// Output:
	// 48 layers, interval 4 (36 GDN); live buffers at tokens [1 4 8 12]:
	//   mlx-lm 0.31.3: lazy, metadata never evaluated  [1157 1262 1402 1542] +35.00/token,  0 evaluations
	//   mlx-lm main: lazy, state evaluated at prefill  [1087 1192 1332 1472] +35.00/token,  1 evaluations
	//   lazy, state evaluated every step               [1039 1039 1039 1039]  +0.00/token, 13 evaluations
	//   eager, state never evaluated                   [979 979 979 979]  +0.00/token,  0 evaluations
	// same 12 tokens under all four: true
	// 499000 / 35 = 14257 tokens
}
