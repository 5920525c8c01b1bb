package walkthrough_test

import (
	"fmt"
	"runtime"
	"slices"

	"github.com/ingotml/ingot/alloc"
	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/generate"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/qwen35"
	"github.com/ingotml/ingot/tensor"
)

// Example_qwen35LazyCache is page 4: one request through the batch generator (mlx-lm's
// server path) with the stock lazy bookkeeping. Live buffers grow by exactly
// (GDN layers - 1) per token.
func Example_qwen35LazyCache() {
	g, m := tinyModel()
	gdn := m.Config().NumGDN()
	fmt.Printf("layers %s: %d GDN, predicted leak %d buffers/token\n", layerKinds(m), gdn, gdn-1)

	b := generate.NewBatchGenerator(m, cache.Lazy, 0)
	if err := b.Insert(generate.Request{ID: 0, Prompt: prompt, MaxTokens: 1000}); err != nil {
		panic(err)
	}
	tokens, prev := 0, 0
	for tokens < 8 {
		toks, err := b.Next() // the first call prefills; each later one emits a token
		if err != nil {
			panic(err)
		}
		if len(toks) == 0 {
			continue
		}
		tokens += len(toks)
		n := live(g)
		if tokens == 1 {
			fmt.Printf("token %d: %d live\n", tokens, n)
		} else {
			fmt.Printf("token %d: %d live (%+d)\n", tokens, n, n-prev)
		}
		prev = n
	}

	var armed []int
	for i, c := range b.Caches() {
		if ac, ok := c.(*cache.ArraysCache); ok && ac.Armed() {
			armed = append(armed, i)
		}
	}
	fmt.Println("GDN caches with left padding set: layers", armed)

	// Read layer 3's mask, as the model reads layer 0's: that chain is consumed.
	mask := b.Caches()[3].(*cache.ArraysCache).MakeMask(1)
	if err := tensor.Eval(mask); err != nil {
		panic(err)
	}
	n := live(g)
	fmt.Printf("after reading layer 3's mask: %d live (%+d)\n", n, n-prev)
	prev = n

	// Evaluate every array every cache holds (cmd/decode --eval-cache-every).
	var all []tensor.Array
	for _, c := range b.Caches() {
		all = append(all, c.State()...)
	}
	if err := tensor.Eval(all...); err != nil {
		panic(err)
	}
	n = live(g)
	fmt.Printf("after evaluating all cache state: %d live (%+d)\n", n, n-prev)
	runtime.KeepAlive(b)
	// Output:
	// layers GGAGGA: 4 GDN, predicted leak 3 buffers/token
	// token 1: 147 live
	// token 2: 150 live (+3)
	// token 3: 153 live (+3)
	// token 4: 156 live (+3)
	// token 5: 159 live (+3)
	// token 6: 162 live (+3)
	// token 7: 165 live (+3)
	// token 8: 168 live (+3)
	// GDN caches with left padding set: layers [0 1 3 4]
	// after reading layer 3's mask: 158 live (-10)
	// after evaluating all cache state: 135 live (-23)
}

// Example_qwen35Histogram: the live buffers by size class, at token 1 and 40 tokens
// later. Only the 4-byte class moves.
func Example_qwen35Histogram() {
	g, m := tinyModel()
	b := generate.NewBatchGenerator(m, cache.Lazy, 0)
	if err := b.Insert(generate.Request{ID: 0, Prompt: prompt, MaxTokens: 1000}); err != nil {
		panic(err)
	}
	decode := func(n int) {
		for n > 0 {
			toks, err := b.Next()
			if err != nil {
				panic(err)
			}
			n -= len(toks)
		}
	}
	decode(1)
	live(g) // synchronize before reading the histogram
	before := g.Allocator().Histogram()
	decode(40)
	live(g)
	after := g.Allocator().Histogram()

	fmt.Println("size class   token 1   token 41   change")
	for _, c := range classes(before, after) {
		fmt.Printf("%8d B %9d %10d %+8d\n", c, count(before, c), count(after, c), count(after, c)-count(before, c))
	}
	runtime.KeepAlive(b)
	// Output:
	// size class   token 1   token 41   change
	//        4 B        22        142     +120
	//       16 B         8          8       +0
	//       64 B        10         10       +0
	//      256 B        19         19       +0
	//     1024 B         8          8       +0
	//     2048 B        14         14       +0
	//     4096 B         4          4       +0
	//     8192 B        22         22       +0
	//    16384 B        10         10       +0
	//    32768 B        12         12       +0
	//    65536 B        18         18       +0
}

// classes lists the size classes present in any of the histograms, ascending.
func classes(hs ...[]alloc.SizeClass) []int64 {
	var out []int64
	for _, h := range hs {
		for _, c := range h {
			if !slices.Contains(out, c.Bytes) {
				out = append(out, c.Bytes)
			}
		}
	}
	slices.Sort(out)
	return out
}

// count is the number of live buffers of class bytes in h.
func count(h []alloc.SizeClass, bytes int64) int {
	for _, c := range h {
		if c.Bytes == bytes {
			return c.Count
		}
	}
	return 0
}

// Example_qwen35ReproModel: the repro's default model (50 layers, one of them
// attention), measured over its first tokens, and where the default limit puts the
// crash (the prediction cmd/decode prints).
func Example_qwen35ReproModel() {
	cfg, err := qwen35.ReproConfig(nn.ReproOptions{})
	if err != nil {
		panic(err)
	}
	g := graph.NewCPU(graph.Options{Alloc: alloc.Config{ResourceLimit: alloc.DefaultResourceLimit}})
	m, err := qwen35.NewRandom(cfg, g, 0, nn.Options{})
	if err != nil {
		panic(err)
	}
	gdn := cfg.NumGDN()
	fmt.Printf("%d layers, %d GDN: predicted leak %d buffers/token\n", cfg.NumLayers, gdn, gdn-1)

	b := generate.NewBatchGenerator(m, cache.Lazy, 0)
	if err := b.Insert(generate.Request{ID: 0, Prompt: prompt, MaxTokens: 1000}); err != nil {
		panic(err)
	}
	var lives []int
	for len(lives) < 4 {
		toks, err := b.Next()
		if err != nil {
			panic(err)
		}
		if len(toks) > 0 {
			lives = append(lives, live(g))
		}
	}
	fmt.Println("live at tokens 1-4:", lives)
	base := lives[0] - (gdn - 1) // live before the first token's links
	fmt.Printf("crash predicted near token %d of a %d limit\n", (alloc.DefaultResourceLimit-base)/(gdn-1), alloc.DefaultResourceLimit)
	runtime.KeepAlive(b)
	// Output:
	// 50 layers, 49 GDN: predicted leak 48 buffers/token
	// live at tokens 1-4: [1251 1299 1347 1395]
	// crash predicted near token 10370 of a 499000 limit
}
