package walkthrough_test

import (
	"fmt"

	"github.com/ingotml/ingot/alloc"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/qwen35"
)

// live synchronizes g and returns its exact live buffer count.
func live(g *graph.Graph) int {
	if err := g.Synchronize(); err != nil {
		fmt.Println("synchronize:", err)
	}
	return g.Allocator().LiveBufferCount()
}

// tinyModel builds the repro's random Qwen3.5-MoE model with 6 layers and
// full_attention_interval 3: GDN, GDN, attention, GDN, GDN, attention. Its graph has
// the default resource limit (499000).
func tinyModel() (*graph.Graph, *qwen35.Model) { return tinyModelLimit(alloc.DefaultResourceLimit) }

// tinyModelLimit is tinyModel on a graph with the given resource limit.
func tinyModelLimit(limit int) (*graph.Graph, *qwen35.Model) {
	g, m := reproModel(6, 3, limit)
	if gdn := m.Config().NumGDN(); gdn != tinyGDN {
		panic(fmt.Sprintf("tiny model has %d GDN layers, want %d", gdn, tinyGDN))
	}
	return g, m
}

// reproModel builds the repro's random Qwen3.5-MoE model with the given number of
// layers and full_attention_interval, on a graph with the given resource limit.
func reproModel(layers, interval, limit int) (*graph.Graph, *qwen35.Model) {
	cfg, err := qwen35.ReproConfig(nn.ReproOptions{Layers: layers, Interval: interval})
	if err != nil {
		panic(err)
	}
	g := graph.NewCPU(graph.Options{Alloc: alloc.Config{ResourceLimit: limit}})
	m, err := qwen35.NewRandom(cfg, g, 0, nn.Options{})
	if err != nil {
		panic(err)
	}
	return g, m
}

// layerKinds spells the model's layer pattern, "G" for GDN and "A" for attention.
func layerKinds(m *qwen35.Model) string {
	cfg := m.Config()
	s := ""
	for i := 0; i < cfg.NumLayers; i++ {
		if cfg.IsAttention(i) {
			s += "A"
		} else {
			s += "G"
		}
	}
	return s
}

// tinyGDN is tinyModel's number of GDN layers.
const tinyGDN = 4

// prompt is the repro's prompt.
var prompt = []int32{1, 2, 3, 4, 5, 6, 7, 8}
