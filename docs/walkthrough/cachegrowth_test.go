package walkthrough_test

import (
	"fmt"
	"runtime"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/generate"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn/qwen35"
)

// mib is n bytes in MiB. (Cached bytes vary by a few hundred bytes from run to run:
// which small buffers the collector frees before a step reuses one. Two decimals of a
// MiB hide that.)
func mib(n int64) float64 { return float64(n) / (1 << 20) }

// decodeEager decodes n tokens of one request under the eager policy and, every 256
// tokens, prints the live count and the allocator's active and cached bytes. With
// clearEvery > 0 it then releases the allocator's cache every clearEvery tokens, as
// mlx-lm's generate_step does every 256.
func decodeEager(n, clearEvery int) {
	// Kernels run on the calling goroutine (graph.Options.Sync), so what is cached
	// when is the same on every run.
	cfg, err := qwen35.ReproConfig(qwen35.ReproOptions{Layers: 6, Interval: 3})
	if err != nil {
		panic(err)
	}
	g := graph.NewCPU(graph.Options{Sync: true})
	m, err := qwen35.NewRandom(cfg, g, 0, qwen35.Options{})
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
		if done%256 == 0 {
			l := live(g) // synchronizes: every buffer the step retired is freed
			st := g.Allocator().Stats()
			fmt.Printf("  tok %4d: live %d, active %.2f MiB, cached %.2f MiB\n",
				done, l, mib(st.ActiveMemory), mib(st.CacheMemory))
		}
		if clearEvery > 0 && done%clearEvery == 0 {
			g.Allocator().ClearCache()
		}
	}
	runtime.KeepAlive(b)
}

// Example_cacheGrowth is page 8: an eager decode keeps its live buffers flat, yet the
// allocator's cache grows. Every 256 tokens the attention layers' KV storage grows by
// one block: a new, larger buffer is made and the old one is freed into the cache,
// where no later request of that size comes to reuse it. Clearing the cache
// periodically holds the memory flat.
func Example_cacheGrowth() {
	fmt.Println("eager, cache never cleared:")
	decodeEager(1536, 0)
	fmt.Println("eager, cache cleared every 256 tokens:")
	decodeEager(1536, 256)
	// Output:
	// eager, cache never cleared:
	//   tok  256: live 127, active 2.02 MiB, cached 0.52 MiB
	//   tok  512: live 127, active 2.14 MiB, cached 0.77 MiB
	//   tok  768: live 127, active 2.27 MiB, cached 1.14 MiB
	//   tok 1024: live 127, active 2.39 MiB, cached 1.64 MiB
	//   tok 1280: live 127, active 2.52 MiB, cached 2.27 MiB
	//   tok 1536: live 127, active 2.64 MiB, cached 3.02 MiB
	// eager, cache cleared every 256 tokens:
	//   tok  256: live 127, active 2.02 MiB, cached 0.52 MiB
	//   tok  512: live 127, active 2.14 MiB, cached 0.43 MiB
	//   tok  768: live 127, active 2.27 MiB, cached 0.70 MiB
	//   tok 1024: live 127, active 2.39 MiB, cached 0.89 MiB
	//   tok 1280: live 127, active 2.52 MiB, cached 0.80 MiB
	//   tok 1536: live 127, active 2.64 MiB, cached 0.92 MiB
}
