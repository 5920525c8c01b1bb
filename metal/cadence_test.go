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

func TestChipCommitLimits(t *testing.T) {
	for arch, want := range map[string][2]int{
		"applegpu_g13p": {20, 40 << 20}, // phone
		"applegpu_g14g": {40, 40 << 20}, // base, Pro
		"applegpu_g13s": {50, 50 << 20}, // Max
		"applegpu_g13d": {50, 50 << 20}, // Ultra
		"applegpu_g99x": {40, 40 << 20}, // unknown class
		"":              {40, 40 << 20}, // no architecture (before macOS 14)
	} {
		ops, bytes := chipCommitLimits(arch)
		require.Equal(t, want, [2]int{ops, bytes}, arch)
	}
	// Set fields win over the chip's.
	require.Equal(t, GPUOptions{CommitEvery: 7, CommitBytes: 40 << 20}, GPUOptions{CommitEvery: 7}.forChip("applegpu_g14g"))
}

// TestCommitCadence: per chip class, command buffers are cut by dispatches and by
// bytes, whichever fills first, each committed without waiting; each Run waits
// once, after its last commit.
func TestCommitCadence(t *testing.T) {
	for _, tc := range []struct {
		arch string
		want []int // dispatches per command buffer
	}{
		// 100 small launches, 5 of 24 MiB, 30 small:
		// 40 | 40 | 20 small + 2 big (48 MiB > 40) | 2 big | 1 big + 30 small (the end).
		{"applegpu_g14g", []int{40, 40, 22, 2, 31}},
		// 50 | 50 | 3 big (72 MiB > 50) | 2 big + 30 small (48 MiB, the end).
		{"applegpu_g13s", []int{50, 50, 3, 32}},
	} {
		t.Run(tc.arch, func(t *testing.T) {
			f := newFake()
			opt, err := GPUOptions{}.forChip(tc.arch).withDefaults()
			require.NoError(t, err)
			r := newRunner(f, opt)
			s := &stepBuilder{f: f}
			small := func() kernels.Launch { // 2 KiB bound
				return copyArgs(s.arg(kernels.Float32, 256), s.arg(kernels.Float32, 256))
			}
			var batch []kernels.Launch
			for range 100 {
				batch = append(batch, small())
			}
			for range 5 { // 3 Mi floats in and out: 24 MiB bound
				batch = append(batch, copyArgs(s.arg(kernels.Float32, 3<<20), s.arg(kernels.Float32, 3<<20)))
			}
			for range 30 {
				batch = append(batch, small())
			}
			for range 2 { // two batches: each waits once, at its end
				f.ops = nil
				require.NoError(t, r.run(batch))
				require.Equal(t, tc.want, perCommit(f.ops))
				var syncs []string
				for _, k := range kinds(f.ops) {
					if k == "commit" || k == "wait" {
						syncs = append(syncs, k)
					}
				}
				want := make([]string, len(tc.want), len(tc.want)+1)
				for i := range want {
					want[i] = "commit"
				}
				require.Equal(t, append(want, "wait"), syncs, "no wait between commits")
			}
		})
	}
}
