package kernels

import (
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// serveHelper runs Help in a loop on another goroutine, as a waiting graph does, and
// returns how to stop it and how many tasks it ran.
func serveHelper(h *Helper) (stop func(), helped *atomic.Int64) {
	done := make(chan struct{})
	helped = new(atomic.Int64)
	go func() {
		for {
			select {
			case <-done:
				return
			default:
				if h.Help() {
					helped.Add(1)
				}
			}
		}
	}()
	return func() { close(done) }, helped
}

// TestHelperRunsEachTaskOnce: an offered task runs exactly once, whether nobody helps
// (nil Helper, or a Helper nobody serves: the join runs it) or a goroutine serves the
// Helper, and whatever it wrote is visible after the join.
func TestHelperRunsEachTaskOnce(t *testing.T) {
	var nilHelper *Helper
	runs := 0
	nilHelper.offer(func() { runs++ })()
	require.Equal(t, 1, runs)

	var h Helper
	h.offer(func() { runs++ })()
	require.Equal(t, 2, runs)
	require.False(t, h.Help(), "a joined task is not on offer any more")

	stop, helped := serveHelper(&h)
	const n = 20000
	vals := make([]int, n)
	for i := range vals {
		h.offer(func() { vals[i] += i + 1 })() // the helper takes some, the joins the rest
		require.Equal(t, i+1, vals[i], "task %d", i)
	}
	stop()
	t.Logf("%d of %d tasks ran on the helper", helped.Load(), n)
}

// TestMoEBlockSameWithHelper: the fused MoE block gives bit-identical outputs when a
// helper computes its shared expert.
func TestMoEBlockSameWithHelper(t *testing.T) {
	var h Helper
	stop, _ := serveHelper(&h)
	defer stop()
	for _, l := range moeBlockSamples(nil) {
		if l.Kernel != KMoEBlock {
			continue
		}
		Run(l)
		want := append([]byte(nil), l.Out().Data...)
		for rep := 0; rep < 50; rep++ {
			Poison(l.Out())
			l.Helper = &h
			Run(l)
			l.Helper = nil
			require.Equal(t, want, l.Out().Data)
		}
	}
}
