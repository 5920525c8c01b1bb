package kernels

import (
	"math/rand"
	"sync/atomic"
	"testing"
	"time"

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

// TestHelperRunsEachJobOnce: a posted job runs exactly once, whether nobody helps (the
// join runs it) or a goroutine serves the Helper, and what it wrote is visible after
// the join; a nil Helper, or one with a job not yet joined, takes no job.
func TestHelperRunsEachJobOnce(t *testing.T) {
	x := []float32{1, 2, 3, 4}
	w := []float32{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1} // the identity
	var nilHelper *Helper
	require.False(t, nilHelper.post(helpJob{x: x, w: w, ld: 4, out: make([]float32, 4)}))
	nilHelper.join() // nothing to join
	out := make([]float32, 4)
	nilHelper.postOrRun(helpJob{x: x, w: w, ld: 4, out: out})
	require.Equal(t, x, out, "postOrRun runs what it cannot post")

	var h Helper
	out = make([]float32, 4)
	require.True(t, h.post(helpJob{x: x, w: w, ld: 4, out: out}))
	require.False(t, h.post(helpJob{}), "one job at a time")
	h.join()
	require.Equal(t, x, out)
	require.False(t, h.Help(), "a joined job is not on offer any more")
	h.join() // joining again is a no-op

	stop, helped := serveHelper(&h)
	const n = 20000
	deadline := time.Now().Add(10 * time.Second)
	for i := 0; i < n || helped.Load() == 0 && time.Now().Before(deadline); i++ {
		xi := []float32{float32(i), 1, 2, 3}
		out := make([]float32, 4)
		require.True(t, h.post(helpJob{x: xi, w: w, ld: 4, out: out}))
		h.join()
		require.Equal(t, xi, out, "job %d", i)
	}
	stop()
	require.Positive(t, helped.Load(), "the served helper took no job")
	t.Logf("%d of %d jobs ran on the helper", helped.Load(), n)
}

// TestParallelStreamsRunsEachChunkOnce: parallelStreams runs f over every row of
// [0, n) exactly once, in whole chunks (the last of each half short), with a nil
// Helper, one nobody serves (the join takes the helper's half) and a served one, the
// two goroutines with distinct scratch indexes; the helper's half starts at a chunk
// boundary.
func TestParallelStreamsRunsEachChunkOnce(t *testing.T) {
	var served Helper
	stop, _ := serveHelper(&served)
	defer stop()
	for _, h := range []*Helper{nil, {}, &served} {
		for _, c := range []struct{ n, step int }{{1, 1}, {7, 3}, {10, 5}, {1000, 7}, {248320, 128}, {5, 8}} {
			for round := 0; round < 20; round++ {
				seen := make([]atomic.Int32, c.n)
				var busy [2]atomic.Int32
				h.parallelStreams(c.n, c.step, func(r0, r1, s int) {
					require.Equal(t, int32(1), busy[s].Add(1), "scratch %d used by two goroutines at once", s)
					defer busy[s].Add(-1)
					mid := min(c.n, (c.n/2+c.step-1)/c.step*c.step)
					require.True(t, r0 < r1 && r1-r0 <= c.step && (r1 <= mid || r0 >= mid), "%+v: chunk [%d, %d) crosses the halves at %d", c, r0, r1, mid)
					for r := r0; r < r1; r++ {
						seen[r].Add(1)
					}
				})
				for r := range seen {
					require.Equal(t, int32(1), seen[r].Load(), "%+v row %d", c, r)
				}
			}
		}
	}
}

// TestHelpedKernelsSame: every sample launch of every family, and sdpa launches deep
// enough to share their heads, give bit-identical outputs when a helper serves them; the
// kernels that offer work (the MoE block its shared expert, the ungrouped GatedDeltaNet
// block its z projection, a deep sdpa half its key/value heads) run until the helper
// has taken their work at least once.
func TestHelpedKernelsSame(t *testing.T) {
	var h Helper
	stop, helped := serveHelper(&h)
	defer stop()
	offers := func(l *Launch) bool {
		switch p := l.Params.(type) {
		case *GDNBlockParams:
			return l.Kernel == KGDNBlock && !p.Grouped
		case *SDPAParams:
			q, k := &l.Args[0], &l.Args[1]
			return q.Shape[0]*k.Shape[1] >= 2 && q.Shape[1]*q.Shape[2]*k.Shape[2] >= sdpaSplitKeys
		}
		return l.Kernel == KMoEBlock
	}
	rng := rand.New(rand.NewSource(7))
	all := Samples(rng)
	for _, c := range []sdpaCase{
		{1, 4, 2, 1, 4100, 16, 16, 4200, ""},
		{2, 4, 2, 1, 3000, 16, 16, 3000, "pad"},
		{1, 6, 3, 3, 6000, 16, 8, 6000, "causal"},
	} {
		all["sdpa deep"] = append(all["sdpa deep"], sdpaSample(rng, c))
	}
	nOffering := 0
	for fam, ls := range all {
		for i, l := range ls {
			Run(l)
			want := append([]byte(nil), l.Out().Data...)
			before, deadline := helped.Load(), time.Now().Add(10*time.Second)
			for rep := 0; rep < 3 || offers(l) && helped.Load() == before && time.Now().Before(deadline); rep++ {
				Poison(l.Out())
				l.Helper = &h
				Run(l)
				l.Helper = nil
				require.Equal(t, want, l.Out().Data, "%s sample %d (%s)", fam, i, l.Kernel.Name)
			}
			if offers(l) {
				nOffering++
				require.Greater(t, helped.Load(), before, "%s sample %d (%s): the helper never took its work", fam, i, l.Kernel.Name)
			}
		}
	}
	require.Positive(t, nOffering, "no sample offers work")
}

// withAndWithoutHelper runs f with no helper (nil), then with one a goroutine serves
// until f returns: a product's values must not depend on who ran its tiles.
func withAndWithoutHelper(f func(h *Helper, served bool)) {
	f(nil, false)
	h := new(Helper)
	stop := make(chan struct{})
	go h.Serve(stop)
	defer close(stop)
	f(h, true)
}
