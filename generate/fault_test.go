package generate_test

import (
	"errors"
	"runtime/debug"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/alloc"
	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/generate"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/qwen35"
)

// flakyProvider is the CPU provider refusing every buffer while fail is set.
type flakyProvider struct {
	alloc.Provider
	fail *atomic.Bool
}

func (p flakyProvider) Alloc(n int) (alloc.Raw, error) {
	if p.fail.Load() {
		return nil, errors.New("injected allocation failure")
	}
	return p.Provider.Alloc(n)
}

// flakyDevice is the CPU device over a flakyProvider.
type flakyDevice struct {
	graph.Device
	p flakyProvider
}

func (d flakyDevice) Provider() alloc.Provider { return d.p }

// TestTransientAllocationFailure: allocations fail during steps 20 and 21 only. The
// request in the generation batch at step 20 is dropped with a *StepError, the one
// admitted at step 21 too; the generator then goes on, and the request admitted after
// the failure gets exactly the tokens it gets alone.
func TestTransientAllocationFailure(t *testing.T) {
	cfg, err := qwen35.ReproConfig(nn.ReproOptions{Layers: 6, Interval: 3})
	require.NoError(t, err)
	for _, p := range []cache.Policy{cache.Lazy, cache.Eager} {
		var fail atomic.Bool
		g := graph.New(flakyDevice{graph.CPU(), flakyProvider{alloc.CPUProvider(), &fail}}, graph.Options{})
		m, err := qwen35.NewRandom(cfg, g, 3, nn.Options{})
		require.NoError(t, err)
		g.Allocator().SetCacheLimit(0) // every malloc reaches the provider

		b := generate.NewBatchGenerator(m, p, 1)
		require.NoError(t, b.Insert(
			generate.Request{ID: 0, Prompt: prompts[0], MaxTokens: 40},
			generate.Request{ID: 1, Prompt: prompts[1], MaxTokens: 10},
			generate.Request{ID: 2, Prompt: prompts[2], MaxTokens: 12}))
		got := map[int][]int32{}
		var failed [][]int
		for step := 0; ; step++ {
			fail.Store(step == 20 || step == 21)
			toks, err := b.Next()
			if errors.Is(err, generate.ErrIdle) {
				break
			}
			if step == 20 || step == 21 {
				var se *generate.StepError
				require.ErrorAs(t, err, &se, "%s step %d", p, step)
				require.ErrorContains(t, err, "[malloc] Unable to allocate")
				failed = append(failed, se.IDs)
				continue
			}
			require.NoError(t, err, "%s step %d", p, step)
			for _, tk := range toks {
				got[tk.ID] = append(got[tk.ID], tk.Token)
			}
		}
		require.Equal(t, [][]int{{0}, {1}}, failed, "%s: the running request, then the one admitted", p)
		require.Len(t, got[0], 19, "%s: tokens of request 0 before the failure", p)
		require.Equal(t, alone(t, m, p, prompts[0], 40)[:19], got[0], "%s", p)
		require.Empty(t, got[1], "%s", p)
		require.Equal(t, alone(t, m, p, prompts[2], 12), got[2], "%s: the generator recovered", p)
	}
}

// TestLimitNeedsOneCollection: each decode step releases the arrays it is done with, so
// on the way to the resource limit nothing dies unnoticed and the allocator's reclaimer forces
// no collection before the step that crashes (it forced one on nearly every miss at the
// limit). In that step every allocation that finds the live count at the limit forces
// one, and none frees a buffer: one such allocation op by op; two with the fused
// per-layer kernels, whose step has two allocations that do not depend on each other
// at that point (the first failing does not cancel the second).
func TestLimitNeedsOneCollection(t *testing.T) {
	// No background collection: a handle that died unnoticed would stay counted until
	// the reclaimer's forced one, which the test would see.
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for _, c := range []struct {
		unfused  bool
		reclaims int
	}{{true, 1}, {false, 2}} {
		cfg, err := qwen35.ReproConfig(nn.ReproOptions{Layers: 9, Interval: 3})
		require.NoError(t, err)
		g := graph.NewCPU(graph.Options{Alloc: alloc.Config{ResourceLimit: 600}})
		m, err := qwen35.NewRandom(cfg, g, 3, nn.Options{Unfused: c.unfused})
		require.NoError(t, err)
		b := generate.NewBatchGenerator(m, cache.Lazy, 0)
		require.NoError(t, b.Insert(generate.Request{Prompt: []int32{1, 2, 3}, MaxTokens: 100000}))
		// Admission (prefill) replaces the batch metadata without releasing the old
		// fields: those are left to the collector. Collect them here; the decode steps
		// that follow must leave nothing for it.
		_, err = b.Next()
		require.NoError(t, err)
		require.NoError(t, g.Synchronize())
		for step := 0; ; step++ {
			require.Less(t, step, 10000, "no crash")
			require.Equal(t, 0, g.Stats().Reclaims, "unfused %v: a collection before step %d", c.unfused, step)
			_, err := b.Next()
			var rle *alloc.ResourceLimitError
			if errors.As(err, &rle) {
				break
			}
			require.NoError(t, err)
		}
		require.Equal(t, c.reclaims, g.Stats().Reclaims, "unfused %v", c.unfused)
	}
}
