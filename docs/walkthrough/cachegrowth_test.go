package walkthrough_test

import (
	"fmt"
	"runtime"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/generate"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/qwen35"
)

// mib is n bytes in MiB. (Cached bytes vary by a few hundred bytes from run to run:
// which small buffers the collector frees before a step reuses one. Whole MiB hide
// that.)
func mib(n int64) float64 { return float64(n) / (1 << 20) }

// decodeEager decodes n tokens of one request under the eager policy on a one-layer
// attention model (the repro's shapes) and, every 512 tokens, prints the live count
// and the allocator's active and cached bytes. With clearEvery > 0 it then releases
// the allocator's cache every clearEvery tokens, as mlx-lm's generate_step does
// every 256.
func decodeEager(n, clearEvery int) {
	// Kernels run on the calling goroutine (graph.Options.Sync), so what is cached
	// when is the same on every run. One attention layer is all the cache growth
	// needs, and it decodes fast.
	cfg, err := qwen35.ReproConfig(nn.ReproOptions{Layers: 1, AttentionOnly: true})
	if err != nil {
		panic(err)
	}
	g := graph.NewCPU(graph.Options{Sync: true})
	m, err := qwen35.NewRandom(cfg, g, 0, nn.Options{})
	if err != nil {
		panic(err)
	}
	b := generate.NewBatchGenerator(m, cache.Eager, 0)
	if err := b.Insert(generate.Request{ID: 0, Prompt: prompt, MaxTokens: n + 1}); err != nil {
		panic(err)
	}
	for done := 0; done < n; {
		out, err := b.Next()
		if err != nil {
			panic(err)
		}
		if len(out) == 0 {
			continue // the prefill step
		}
		done += len(out)
		if done%512 == 0 {
			l := live(g) // synchronizes: every buffer the step retired is freed
			st := g.Allocator().Stats()
			fmt.Printf("  tok %4d: live %d, active %.2f MiB, cached %2.0f MiB\n",
				done, l, mib(st.ActiveMemory), mib(st.CacheMemory))
		}
		if clearEvery > 0 && done%clearEvery == 0 {
			g.Allocator().ClearCache()
		}
	}
	runtime.KeepAlive(b)
}

// Example_cacheGrowth is page 8: an eager decode keeps its live buffers flat, yet the
// allocator's cache grows: buffers whose size follows the sequence length are freed
// into it and never reused, since every later request is larger. Clearing the cache
// every 256 tokens keeps only what the last 256 tokens retired.
func Example_cacheGrowth() {
	fmt.Println("eager, cache never cleared:")
	decodeEager(3072, 0)
	fmt.Println("eager, cache cleared every 256 tokens:")
	decodeEager(3072, 256)
	// Output:
	// eager, cache never cleared:
	//   tok  512: live 23, active 0.53 MiB, cached  1 MiB
	//   tok 1024: live 23, active 0.65 MiB, cached  3 MiB
	//   tok 1536: live 23, active 0.78 MiB, cached  6 MiB
	//   tok 2048: live 23, active 0.90 MiB, cached 10 MiB
	//   tok 2560: live 23, active 1.03 MiB, cached 16 MiB
	//   tok 3072: live 23, active 1.15 MiB, cached 23 MiB
	// eager, cache cleared every 256 tokens:
	//   tok  512: live 23, active 0.53 MiB, cached  1 MiB
	//   tok 1024: live 23, active 0.65 MiB, cached  2 MiB
	//   tok 1536: live 23, active 0.78 MiB, cached  3 MiB
	//   tok 2048: live 23, active 0.90 MiB, cached  4 MiB
	//   tok 2560: live 23, active 1.03 MiB, cached  5 MiB
	//   tok 3072: live 23, active 1.15 MiB, cached  6 MiB
}
