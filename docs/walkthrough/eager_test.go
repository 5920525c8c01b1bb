package walkthrough_test

import (
	"errors"
	"fmt"
	"runtime"
	"slices"

	"github.com/ingotml/ingot/alloc"
	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/generate"
)

// decodeOne decodes up to n tokens of one request through the batch generator under
// policy, on a graph with the given resource limit. It returns the tokens, the live
// count after each token listed in report, and the error that stopped it early.
func decodeOne(policy cache.Policy, limit, n int, report []int) ([]int32, []int, error) {
	g, m := tinyModelLimit(limit)
	b := generate.NewBatchGenerator(m, policy, 0)
	if err := b.Insert(generate.Request{ID: 0, Prompt: prompt, MaxTokens: n + 1}); err != nil {
		panic(err)
	}
	var toks []int32
	var lives []int
	for len(toks) < n {
		out, err := b.Next() // the first call prefills; each later one emits a token
		if err != nil {
			return toks, lives, err
		}
		for _, t := range out {
			toks = append(toks, t.Token)
			if slices.Contains(report, len(toks)) {
				lives = append(lives, live(g))
			}
		}
	}
	runtime.KeepAlive(b) // the batch (and its caches) stays alive to the end
	return toks, lives, nil
}

// Example_eagerFix is page 5: the same model and request under both policies. Eager
// keeps the padding as host integers: the live count stays flat and the tokens are
// the same.
func Example_eagerFix() {
	report := []int{1, 10, 20, 30}
	var tokens [][]int32
	for _, p := range []cache.Policy{cache.Lazy, cache.Eager} {
		toks, lives, err := decodeOne(p, alloc.DefaultResourceLimit, 30, report)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%-5s live at tokens %v: %v\n", p, report, lives)
		tokens = append(tokens, toks)
	}
	fmt.Println("first tokens:", tokens[0][:10])
	fmt.Println("identical tokens:", slices.Equal(tokens[0], tokens[1]))
	// Output:
	// lazy  live at tokens [1 10 20 30]: [147 174 204 234]
	// eager live at tokens [1 10 20 30]: [127 127 127 127]
	// first tokens: [27 8 87 116 100 33 67 103 126 61]
	// identical tokens: true
}

// Example_eagerFixLimit: with a resource limit of 300 the lazy run dies; the eager run
// decodes past that point.
func Example_eagerFixLimit() {
	const limit = 300
	for _, c := range []struct {
		p        cache.Policy
		perToken int // predicted growth
	}{{cache.Lazy, tinyGDN - 1}, {cache.Eager, 0}} {
		toks, lives, err := decodeOne(c.p, limit, 100, []int{1})
		fmt.Printf("%s, limit %d: %d live at token 1\n", c.p, limit, lives[0])
		if c.perToken > 0 {
			fmt.Printf("  after-step counts reach the limit near token %d\n", 1+(limit-lives[0])/c.perToken)
		}
		var rle *alloc.ResourceLimitError
		switch {
		case errors.As(err, &rle):
			fmt.Printf("  crashed after %d tokens: %v\n", len(toks), rle)
		case err != nil:
			panic(err)
		default:
			fmt.Printf("  decoded %d tokens\n", len(toks))
		}
	}
	// Output:
	// lazy, limit 300: 147 live at token 1
	//   after-step counts reach the limit near token 52
	//   crashed after 49 tokens: [metal::malloc] Resource limit (300) exceeded.
	// eager, limit 300: 127 live at token 1
	//   decoded 100 tokens
}
