package generate_test

import (
	"os"
	"testing"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/generate"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/qwen35"
)

// BenchmarkDecode measures decode throughput of the repro's default model (50 layers,
// hidden 64, batch path, one request) on the CPU device: ns, allocations and graph nodes
// built per token.
func BenchmarkDecode(b *testing.B) {
	for _, p := range []cache.Policy{cache.Lazy, cache.Eager} {
		b.Run(p.String(), func(b *testing.B) {
			cfg, err := qwen35.ReproConfig(nn.ReproOptions{})
			if err != nil {
				b.Fatal(err)
			}
			g := graph.NewCPU(graph.Options{Sync: os.Getenv("SYNC") != ""})
			m, err := qwen35.NewRandom(cfg, g, 0, nn.Options{})
			if err != nil {
				b.Fatal(err)
			}
			bg := generate.NewBatchGenerator(m, p, 0)
			if err := bg.Insert(generate.Request{Prompt: []int32{1, 2, 3, 4, 5, 6, 7, 8}, MaxTokens: b.N + 2}); err != nil {
				b.Fatal(err)
			}
			if _, err := bg.Next(); err != nil { // prefill
				b.Fatal(err)
			}
			b.ReportAllocs()
			before := g.Stats().Created
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := bg.Next(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
			b.ReportMetric(float64(g.Stats().Created-before)/float64(b.N), "nodes/token")
		})
	}
}
