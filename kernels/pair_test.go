package kernels

import (
	"math/rand"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// pairQMV is a one-row qmv of an n x k 4-bit matrix (g64, float32 scales) from x to a
// fresh output.
func pairQMV(rng *rand.Rand, x Arg, n, k int) *Launch {
	w, s, b := qSampleMatrix(rng, n, k, 4, 64, Float32)
	return launch(KQMV, &QuantParams{M: 1, N: n, K: k, Bits: 4, Group: 64}, x, w, s, b,
		NewArg(Contiguous(Float32, 1, n)))
}

// TestPairAheadRules: the MLP's up product pairs with its gate product across the silu
// between them, and not when anything between them writes what up reads or touches
// up's output, when the sizes differ or are small, or past the window.
func TestPairAheadRules(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	const n, k = 4096, 512 // 1 MB of codes and 128 KB of scales and biases
	x := randArg(rng, Contiguous(Float32, 1, k), -1, 1)
	gate, up := pairQMV(rng, x, n, k), pairQMV(rng, x, n, k)
	silu := &Launch{Kernel: KLinear, NArgs: 2} // stands for the silu of gate: reads it, writes anew
	silu.Args[0], silu.Args[1] = *gate.Out(), NewArg(Contiguous(Float32, 1, n))
	batch := func(ls ...*Launch) []Launch {
		out := make([]Launch, len(ls))
		for i, l := range ls {
			out[i] = *l
		}
		return out
	}
	require.Equal(t, 2, PairAhead(batch(gate, silu, up), 0))
	require.Equal(t, 1, PairAhead(batch(gate, up, silu), 0))
	require.Equal(t, -1, PairAhead(batch(gate, silu, silu, silu, up), 0), "past the window")

	writesX := *silu
	writesX.Args[1] = x // a launch between writes up's input
	require.Equal(t, -1, PairAhead(batch(gate, &writesX, up), 0))
	readsUp := *silu
	readsUp.Args[0] = *up.Out() // a launch between reads up's output
	require.Equal(t, -1, PairAhead(batch(gate, &readsUp, up), 0))
	chained := pairQMV(rng, *gate.Out(), n, n) // reads gate's output
	chained.Args[1], chained.Args[2], chained.Args[3] = up.Args[1], up.Args[2], up.Args[3]
	chained.Params = &QuantParams{M: 1, N: n, K: k, Bits: 4, Group: 64}
	require.Equal(t, -1, PairAhead(batch(gate, chained), 0))

	other := pairQMV(rng, x, n+64, k)
	require.Equal(t, -1, PairAhead(batch(gate, other), 0), "other sizes")
	small, small2 := pairQMV(rng, x, 256, k), pairQMV(rng, x, 256, k)
	require.Equal(t, -1, PairAhead(batch(small, small2), 0), "under pairMinBytes")
	two := *up
	two.Params = &QuantParams{M: 2, N: n, K: k, Bits: 4, Group: 64}
	require.Equal(t, -1, PairAhead(batch(gate, &two), 0), "more than one x row")
}

// TestRunPairMatchesOneAfterTheOther: a pair run at once, with a helper serving it or
// with none, writes exactly what the two products write one after the other; a panic
// of the helper's product reaches the caller once both are done.
func TestRunPairMatchesOneAfterTheOther(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	const n, k = 4096, 512
	x := randArg(rng, Contiguous(Float32, 1, k), -1, 1)
	a, b := pairQMV(rng, x, n, k), pairQMV(rng, x, n, k)
	a.Kernel.CPU(a)
	b.Kernel.CPU(b)
	wantA, wantB := slices.Clone(a.Out().Data), slices.Clone(b.Out().Data)
	for _, served := range []bool{false, true} {
		clear(a.Out().Data)
		clear(b.Out().Data)
		h := &Helper{}
		a.Helper, b.Helper = h, h
		if served {
			stop := make(chan struct{})
			go h.Serve(stop)
			RunPair(a, b)
			close(stop)
		} else {
			RunPair(a, b) // b runs here, at the join
		}
		require.Equal(t, wantA, a.Out().Data, "served %v", served)
		require.Equal(t, wantB, b.Out().Data, "served %v", served)
	}

	h := &Helper{}
	a.Helper = h
	bad := *b
	bad.Kernel = &Kernel{Name: "boom", CPU: func(*Launch) { panic("boom") }} // a memory fault, say
	stop := make(chan struct{})
	defer close(stop)
	go h.Serve(stop)
	require.PanicsWithValue(t, "boom", func() { RunPair(a, &bad) })
	require.Equal(t, int32(jobIdle), h.state.Load(), "the helper's slot is free again")
}

// TestHelperSlotFreeAfterAPanic: when the worker's part of a split product panics (a
// memory fault on a mapped weight), the helper's part is done before the panic goes
// on, and the Helper's slot is free for the next product; the same when the part the
// worker runs at the join panics.
func TestHelperSlotFreeAfterAPanic(t *testing.T) {
	h := &Helper{}
	stop := make(chan struct{})
	defer close(stop)
	go h.Serve(stop)
	var helperRows atomic.Int64
	require.Panics(t, func() {
		h.parallelStreams(1<<12, 16, func(r0, r1, s int) {
			if s == 0 {
				panic("fault")
			}
			helperRows.Add(int64(r1 - r0))
			time.Sleep(10 * time.Microsecond)
		})
	})
	require.Equal(t, int32(jobIdle), h.state.Load())
	require.Nil(t, h.job.fn, "the job is dropped")
	done := helperRows.Load()
	time.Sleep(5 * time.Millisecond)
	require.Equal(t, done, helperRows.Load(), "nothing runs after the panic went on")

	idle := &Helper{} // no one serves it: the worker runs the offer at the join
	require.True(t, idle.post(helpJob{fn: func() { panic("fault at the join") }}))
	require.PanicsWithValue(t, "fault at the join", idle.join)
	require.Equal(t, int32(jobIdle), idle.state.Load())
}
