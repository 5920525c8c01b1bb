package metal

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/kernels"
)

// wordScratchKernel binds the error word and n bytes of scratch, as sdpa does.
func wordScratchKernel(n int) *kernels.Kernel {
	return testKernel("ws", func(l *kernels.Launch, e kernels.Encoder) {
		e.Entry("arange_float32")
		e.SetArg(0, l.Out())
		e.SetBytes(1, make([]byte, 12))
		e.Scratch(2, n)
		e.ErrorWord(3)
		e.DispatchThreads([3]int{4, 1, 1}, [3]int{4, 1, 1})
	})
}

// TestSubmitOverlapsBatches: batch B is encoded and committed before batch A is waited
// for; while both are in flight each has its own scratch buffer and error word, and a
// failed command buffer of A is reported by A's finish with A's kernels, not B's. Once
// A is finished, batch C takes A's scratch and word, never B's (still in flight). The
// old runner waited at the end of every batch and gave each the same scratch from 0.
func TestSubmitOverlapsBatches(t *testing.T) {
	f := newFake()
	r := newRunner(f, GPUOptions{CommitEvery: 1})
	out := f.alloc(kernels.Contiguous(kernels.Float32, 4))
	launch := func(n int) kernels.Launch {
		l := kernels.Launch{Kernel: wordScratchKernel(n), NArgs: 1}
		l.Args[0] = out
		return l
	}
	binds := func() []string { return append(filter(f.ops, "buffer 2"), filter(f.ops, "buffer 3")...) }

	a := r.submit([]kernels.Launch{launch(64), arange(f, kernels.Float32, 4, 0)})
	require.Equal(t, []string{"buffer 2 = b1001+0", "buffer 3 = b501+0"}, binds())
	f.ops = nil
	b := r.submit([]kernels.Launch{launch(64)})
	require.Equal(t, []string{"buffer 2 = b1002+0", "buffer 3 = b502+0"}, binds(), "B's own scratch and word")
	assert.Equal(t, 0, count(f.ops, "wait"), "B encoded with A in flight")

	f.failAt = 1 // A's second command buffer
	require.EqualError(t, r.finish(a), "metal: command buffer of launches 1 to 1 of 2 (arange to arange) failed: page fault")
	f.failAt = -1
	f.ops = nil
	c := r.submit([]kernels.Launch{launch(64)})
	require.Equal(t, []string{"buffer 2 = b1001+0", "buffer 3 = b501+0"}, binds(), "C takes what A released")
	require.NoError(t, r.finish(b))
	require.NoError(t, r.finish(c))
	assert.Equal(t, 2, f.scratches)
	assert.Equal(t, 2, f.words)

	// Another graph's batch E, submitted after D, finished first: D is finished with
	// it (batches complete in order) and keeps its result for its own finish.
	f.ops = nil
	f.failAt, f.failOnce = 0, true
	d := r.submit([]kernels.Launch{arange(f, kernels.Float32, 4, 0)})
	e := r.submit([]kernels.Launch{arange(f, kernels.Float32, 4, 0)})
	require.NoError(t, r.finish(e))
	assert.Equal(t, 2, count(f.ops, "wait"), "D's wait, then E's")
	require.EqualError(t, r.finish(d), "metal: command buffer of launches 0 to 0 of 1 (arange to arange) failed: page fault")
	assert.Equal(t, 2, count(f.ops, "wait"), "D's result was kept")
	require.Empty(t, r.inFlight)
	require.PanicsWithValue(t, "metal: finishing a batch that was not submitted", func() { _ = r.finish(&inflight{}) })
}

// TestSubmitGrownScratchReleasedAfterItsBatch: a scratch buffer a batch outgrew is
// handed back only when that batch finishes, never while it may still be read.
func TestSubmitGrownScratchReleasedAfterItsBatch(t *testing.T) {
	f := newFake()
	r := newRunner(f, GPUOptions{CommitEvery: 1})
	out := f.alloc(kernels.Contiguous(kernels.Float32, 4))
	l := func(n int) kernels.Launch {
		x := kernels.Launch{Kernel: wordScratchKernel(n), NArgs: 1}
		x.Args[0] = out
		return x
	}
	a := r.submit([]kernels.Launch{l(1 << 20), l(3 << 20)}) // outgrows b1001 for b1002
	b := r.submit([]kernels.Launch{l(64)})
	assert.Empty(t, filter(f.ops, "release scratch"), "nothing released while A is in flight")
	require.NoError(t, r.finish(a))
	assert.Equal(t, []string{"release scratch b1001"}, filter(f.ops, "release scratch"))
	require.NoError(t, r.finish(b))
}

// TestGPUSubmitWaitOnce: GPU.Submit's wait finishes its batch once; a second call
// returns the same error without waiting again.
func TestGPUSubmitWaitOnce(t *testing.T) {
	f := newFake()
	f.failAt = 0
	r := newRunner(f, GPUOptions{})
	var mu sync.Mutex
	mu.Lock()
	done, wait := submitOn(r, &mu, []kernels.Launch{arange(f, kernels.Float32, 4, 0)}, func(g func()) { g() })
	mu.Unlock()
	<-done
	const want = "metal: command buffer of launches 0 to 0 of 1 (arange to arange) failed: page fault"
	require.EqualError(t, wait(), want)
	require.EqualError(t, wait(), want)
	assert.Equal(t, 1, count(f.ops, "wait"))
}
