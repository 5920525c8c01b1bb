package walkthrough_test

import (
	"fmt"
	"runtime"
	"testing"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/generate"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn/qwen35"
)

func newModel(t *testing.T, layers, interval int) (*graph.Graph, *qwen35.Model) {
	cfg, err := qwen35.ReproConfig(qwen35.ReproOptions{Layers: layers, Interval: interval})
	if err != nil {
		t.Fatal(err)
	}
	g := graph.NewCPU(graph.Options{})
	m, err := qwen35.NewRandom(cfg, g, 0, qwen35.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return g, m
}

func TestScratchHist(t *testing.T) {
	g, m := newModel(t, 6, 3)
	g.EnableCensus()
	b := generate.NewBatchGenerator(m, cache.Lazy, 0)
	b.Insert(generate.Request{ID: 0, Prompt: []int32{1, 2, 3, 4, 5, 6, 7, 8}, MaxTokens: 100})
	b.Next()
	b.Next()
	live(g)
	h0 := g.Allocator().Histogram()
	tr := graph.NewCensusTracker()
	for i := 2; i <= 41; i++ {
		b.Next()
		if i%5 == 0 {
			live(g)
			tr.Add(i, g.Census())
		}
	}
	live(g)
	h1 := g.Allocator().Histogram()
	fmt.Println(h0)
	fmt.Println(h1)
	for _, s := range g.Census() {
		fmt.Printf("%+v\n", s)
	}
	for _, s := range tr.Growing(0.5) {
		fmt.Printf("%+v\n", s)
	}
	runtime.KeepAlive(b)
}

func TestScratchChurn(t *testing.T) {
	for _, p := range []cache.Policy{cache.Lazy, cache.Eager} {
		g, m := newModel(t, 6, 3)
		b := generate.NewBatchGenerator(m, p, 2)
		reqs := 12
		ins, done, steps := 0, 0, 0
		fmt.Println(p, "base", live(g))
		for done < reqs {
			if ins < reqs && b.Active()+b.Pending() < 2 && steps%3 == 0 {
				pr := make([]int32, 1+ins%4)
				for i := range pr {
					pr[i] = int32(1 + (ins*7+i*3)%120)
				}
				b.Insert(generate.Request{ID: ins, Prompt: pr, MaxTokens: 6})
				ins++
			}
			steps++
			toks, err := b.Next()
			if err == generate.ErrIdle {
				continue
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, tk := range toks {
				if tk.Finished {
					done++
					fmt.Printf("  req %d done step %d active %d live %d\n", tk.ID, steps, b.Active(), live(g))
				}
			}
		}
	}
}
