package metal

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/kernels"
)

// wordBackend is the fake with a GPU that, at the wait, writes fault into the error
// word (when fault is set), and that keeps each setBytes payload of 4 bytes (the tags).
type wordBackend struct {
	*fakeBackend
	word  []byte
	fault []uint32
	tags  []uint32
}

func (w *wordBackend) errorWord() (deviceBuffer, []byte, error) {
	return &fakeBuf{n: kernels.ErrorWordSize}, w.word, nil
}

func (w *wordBackend) setBytes(index int, b []byte) {
	if len(b) == 4 {
		w.tags = append(w.tags, binary.LittleEndian.Uint32(b))
	}
	w.fakeBackend.setBytes(index, b)
}

func (w *wordBackend) wait(upTo int) (int, error) {
	for i, v := range w.fault {
		binary.LittleEndian.PutUint32(w.word[4*i:], v)
	}
	return w.fakeBackend.wait(upTo)
}

// TestRunErrorWord: every launch that asks binds the one word and its own position; the
// word is zeroed at the batch's first binding and decoded after the wait into the
// kernel's *LaunchError; a batch that binds no word does not read a stale one.
func TestRunErrorWord(t *testing.T) {
	w := &wordBackend{fakeBackend: newFake(), word: make([]byte, kernels.ErrorWordSize)}
	k := testKernel("t", func(l *kernels.Launch, e kernels.Encoder) {
		e.Entry("arange_float32")
		e.SetArg(0, l.Out())
		e.ErrorWord(1)
		e.DispatchThreads([3]int{1, 1, 1}, [3]int{1, 1, 1})
	})
	k.IndexAxis = func(*kernels.Launch) int { return 3 }
	launch := func() kernels.Launch {
		l := kernels.Launch{Kernel: k, NArgs: 1}
		l.Args[0] = w.alloc(kernels.Contiguous(kernels.Float32, 1))
		return l
	}
	r := newRunner(w, GPUOptions{CommitEvery: 2})
	batch := []kernels.Launch{arange(w.fakeBackend, kernels.Float32, 4, 0), launch(), launch(), launch()}
	copy(w.word, []byte{9, 9, 9, 9}) // left from an earlier batch
	w.fault = []uint32{^uint32(2), ^uint32(0), 7}
	err := r.run(batch)
	require.EqualError(t, err, "metal: kernel t failed: kernels: t: index 7 out of range for an axis of length 3")
	var le *kernels.LaunchError
	require.ErrorAs(t, err, &le)
	require.Equal(t, []uint32{1, 2, 3}, w.tags, "each launch's position in the batch")
	require.Equal(t, 3, count(w.ops, "buffer 1 = b0+0"), "the word, bound by every launch that asks")
	require.Equal(t, 3, count(w.ops, "bytes 2 (4)"))

	w.fault, w.tags = nil, nil
	require.NoError(t, r.run([]kernels.Launch{launch()}), "zeroed before the batch")
	require.Equal(t, []uint32{0}, w.tags)
	require.Equal(t, make([]byte, kernels.ErrorWordSize), w.word)

	copy(w.word, []byte{1, 0, 0, 0})
	require.NoError(t, r.run([]kernels.Launch{arange(w.fakeBackend, kernels.Float32, 4, 0)}),
		"a batch that binds no word does not read it")

	far := testKernel("far", func(l *kernels.Launch, e kernels.Encoder) {
		e.Entry("arange_float32")
		e.ErrorWord(maxBufferIndex - 1)
	})
	require.EqualError(t, r.run([]kernels.Launch{{Kernel: far}}),
		"metal: kernel far: buffer index 31 is not in 0..30")
}
