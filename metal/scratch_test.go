package metal

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/kernels"
)

// scratchKernel binds n bytes of scratch at 2 before each of its two dispatches, as
// the split kernels (sdpa, qswitch_glu) do.
func scratchKernel(n int) *kernels.Kernel {
	return testKernel("scratchy", func(l *kernels.Launch, e kernels.Encoder) {
		for range 2 {
			e.Entry("arange_float32")
			e.SetArg(0, l.Out())
			e.SetBytes(1, make([]byte, 12))
			e.Scratch(2, n)
			e.DispatchThreads([3]int{4, 1, 1}, [3]int{4, 1, 1})
		}
	})
}

// TestScratchRegions: a launch gets the same region at each of its dispatches, the next
// launch of the batch the next region (256-byte aligned), a launch past the buffer's
// end a larger buffer, and the next batch starts again at offset 0 of the last buffer.
func TestScratchRegions(t *testing.T) {
	f := newFake()
	r := newRunner(f, GPUOptions{})
	out := f.alloc(kernels.Contiguous(kernels.Float32, 4))
	launch := func(n int) kernels.Launch {
		l := kernels.Launch{Kernel: scratchKernel(n), NArgs: 1}
		l.Args[0] = out
		return l
	}
	require.NoError(t, r.run([]kernels.Launch{launch(1000), launch(100)}))
	require.Equal(t, 1, count(f.ops, "scratch"), "one buffer for the batch")
	require.Equal(t, []string{"scratch 1048576"}, filter(f.ops, "scratch"))
	require.Equal(t, []string{"buffer 2 = b1001+0", "buffer 2 = b1001+0", "buffer 2 = b1001+1024", "buffer 2 = b1001+1024"},
		filter(f.ops, "buffer 2"))

	f.ops = nil
	require.NoError(t, r.run([]kernels.Launch{launch(1 << 20), launch(3 << 20)}))
	require.Equal(t, []string{"scratch 4194304"}, filter(f.ops, "scratch"),
		"1 MiB fits the buffer from 0; 3 MiB past its end gets one doubled until it fits")
	require.Equal(t, []string{"buffer 2 = b1001+0", "buffer 2 = b1001+0", "buffer 2 = b1002+0", "buffer 2 = b1002+0"},
		filter(f.ops, "buffer 2"))

	f.ops = nil
	require.NoError(t, r.run([]kernels.Launch{launch(4096)}))
	require.Equal(t, []string{"buffer 2 = b1002+0", "buffer 2 = b1002+0"}, filter(f.ops, "buffer 2"),
		"a new batch reuses the buffer from 0: the last batch's wait ended every use")
	require.Equal(t, 0, count(f.ops, "scratch"))
}

// TestScratchErrors: a bad size, or a second size for the same index, fails the launch.
func TestScratchErrors(t *testing.T) {
	f := newFake()
	r := newRunner(f, GPUOptions{})
	out := f.alloc(kernels.Contiguous(kernels.Float32, 4))
	bad := testKernel("bad", func(l *kernels.Launch, e kernels.Encoder) {
		e.Entry("arange_float32")
		e.Scratch(2, 0)
	})
	l := kernels.Launch{Kernel: bad, NArgs: 1}
	l.Args[0] = out
	require.EqualError(t, r.run([]kernels.Launch{l}), "metal: kernel bad: buffer(2): scratch of 0 bytes")
	twoSizes := testKernel("two", func(l *kernels.Launch, e kernels.Encoder) {
		e.Entry("arange_float32")
		e.Scratch(2, 64)
		e.Scratch(2, 128)
	})
	l.Kernel = twoSizes
	require.EqualError(t, r.run([]kernels.Launch{l}), "metal: kernel two: buffer(2): scratch of 128 bytes, bound before with 64")
}

// filter returns the ops that start with prefix.
func filter(ops []string, prefix string) []string {
	var out []string
	for _, o := range ops {
		if len(o) >= len(prefix) && o[:len(prefix)] == prefix {
			out = append(out, o)
		}
	}
	return out
}
