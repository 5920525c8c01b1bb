package metal

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/kernels"
)

// copyArgs is a real copy launch of n float32 from src to dst.
func copyArgs(src, dst kernels.Arg) kernels.Launch {
	l := kernels.Launch{Kernel: kernels.KCopy, NArgs: 2}
	l.Args[0], l.Args[1] = src, dst
	return l
}

// TestBarrierBetweenDependentDispatches: the buffers are untracked, so a dispatch that
// binds what an earlier dispatch of the same command buffer wrote gets a memory
// barrier first; an independent one does not, and a new command buffer starts clean
// (the fence orders passes).
func TestBarrierBetweenDependentDispatches(t *testing.T) {
	f := newFake()
	r := newRunner(f, GPUOptions{CommitEvery: 50})
	a := f.alloc(kernels.Contiguous(kernels.Float32, 8))
	b := f.alloc(kernels.Contiguous(kernels.Float32, 8))
	c := f.alloc(kernels.Contiguous(kernels.Float32, 8))
	d := f.alloc(kernels.Contiguous(kernels.Float32, 8))
	batch := []kernels.Launch{
		copyArgs(a, b), // writes b
		copyArgs(c, d), // independent
		copyArgs(b, c), // reads b: barrier
		copyArgs(a, d), // writes d, written before (write after write): barrier
	}
	require.NoError(t, r.run(batch))
	require.Equal(t, []string{"threads", "threads", "barrier", "threads", "barrier", "threads", "commit", "wait"},
		kinds(f.ops))

	// One launch per command buffer: no barrier at all.
	f.ops = nil
	r = newRunner(f, GPUOptions{CommitEvery: 1})
	require.NoError(t, r.run(batch))
	require.Equal(t, 0, count(f.ops, "barrier"))
}

// TestBarrierBetweenSplitPasses: sdpa's combine reads the partials its first dispatch
// wrote to the scratch: a barrier between the two.
func TestBarrierBetweenSplitPasses(t *testing.T) {
	f := newFake()
	r := newRunner(f, GPUOptions{CommitEvery: 50})
	s := &stepBuilder{f: f}
	l := kernels.Launch{Kernel: kernels.KSDPA, Params: &kernels.SDPAParams{Scale: 0.1}, NArgs: 4}
	l.Args[0] = s.arg(kernels.Float32, 1, 8, 1, 64)
	l.Args[1] = s.arg(kernels.Float32, 1, 2, 4096, 64)
	l.Args[2] = s.arg(kernels.Float32, 1, 2, 4096, 64)
	l.Args[3] = s.arg(kernels.Float32, 1, 8, 1, 64)
	require.NoError(t, r.run([]kernels.Launch{l}))
	require.Equal(t, []string{"scratch", "groups", "barrier", "groups", "commit", "wait"}, kinds(f.ops))
}

// TestCommitByBytes: command buffers are cut by bytes of bound arguments as well as by
// dispatches: 12 MB launches with a 30 MB cap go three to a command buffer.
func TestCommitByBytes(t *testing.T) {
	f := newFake()
	r := newRunner(f, GPUOptions{CommitEvery: 50, CommitBytes: 30 << 20})
	s := &stepBuilder{f: f}
	var batch []kernels.Launch
	for range 7 {
		// 1.5 Mi floats in and out: 12 MiB bound a launch.
		batch = append(batch, copyArgs(s.arg(kernels.Float32, 3<<19), s.arg(kernels.Float32, 3<<19)))
	}
	require.NoError(t, r.run(batch))
	require.Equal(t, []int{3, 3, 1}, perCommit(f.ops))

	_, err := GPUOptions{CommitBytes: -1}.withDefaults()
	require.EqualError(t, err, "metal: GPUOptions.CommitBytes is -1; want 0 (for 52428800) or more")
}

// kinds returns each op's first word, for the ops that shape a command buffer.
func kinds(ops []string) []string {
	var out []string
	for _, o := range ops {
		for _, k := range []string{"threads", "groups", "barrier", "commit", "wait", "scratch"} {
			if len(o) >= len(k) && o[:len(k)] == k {
				out = append(out, k)
			}
		}
	}
	return out
}

// perCommit returns the dispatches of each committed command buffer.
func perCommit(ops []string) []int {
	var out []int
	n := 0
	for _, k := range kinds(ops) {
		switch k {
		case "threads", "groups":
			n++
		case "commit":
			out = append(out, n)
			n = 0
		}
	}
	return out
}
