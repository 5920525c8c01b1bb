//go:build !darwin

package metal

import (
	"errors"
	"fmt"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/kernels"
	"github.com/ingotml/ingot/kernels/msltest"
)

// oobTake is a take from a [128, 4] float32 table (row r holding r+1) of the given ids.
func oobTake(ids ...int32) *kernels.Launch {
	l := &kernels.Launch{Kernel: kernels.KTake, NArgs: 3,
		Params: &kernels.TakeParams{Outer: 1, Axis: 128, Inner: 4, NIdx: len(ids)}}
	l.Args[0] = kernels.NewArg(kernels.Contiguous(kernels.Float32, 128, 4))
	l.Args[1] = kernels.NewArg(kernels.Contiguous(kernels.Int32, len(ids)))
	l.Args[2] = kernels.NewArg(kernels.Contiguous(kernels.Float32, len(ids), 4))
	table := kernels.F32(l.Args[0].Data)
	for i := range table {
		table[i] = float32(i/4 + 1)
	}
	copy(kernels.I32(l.Args[1].Data), ids)
	return l
}

// TestEmulatedRunReportsOutOfRangeIndex: GPU.Run of a batch whose second take holds an
// id outside the table returns the *kernels.LaunchError the CPU device's twin stops
// with, worded as the CPU device words it; the bad row is zeros, the rest is written;
// the next batch, in range, runs clean (the word is zeroed per batch).
func TestEmulatedRunReportsOutOfRangeIndex(t *testing.T) {
	g, b := newEmulatedGPU(t, GPUOptions{CommitEvery: 1}, msltest.OrderShuffled)
	var bufs []*emuBuffer
	defer func() {
		for _, b := range bufs {
			b.Release()
		}
	}()
	batchOf := func(ls ...*kernels.Launch) []kernels.Launch {
		var batch []kernels.Launch
		for _, l := range ls {
			c, bs := onEmulator(t, b.prov, l)
			batch = append(batch, c)
			bufs = append(bufs, bs...)
		}
		return batch
	}
	live := b.prov.liveBuffers()
	batch := batchOf(oobTake(5, 127), oobTake(3, 1051402086, -129), oobTake(-128, 200))
	err := g.Run(batch)
	require.EqualError(t, err, "metal: kernel take failed: kernels: take: index 1051402086 out of range for an axis of length 128")
	var le *kernels.LaunchError
	require.True(t, errors.As(err, &le))
	require.Equal(t, &kernels.LaunchError{Kernel: "take",
		Msg: "index 1051402086 out of range for an axis of length 128"}, le)
	require.Equal(t, []float32{6, 6, 6, 6, 128, 128, 128, 128}, kernels.F32(batch[0].Out().Data))
	require.Equal(t, []float32{4, 4, 4, 4, 0, 0, 0, 0, 0, 0, 0, 0}, kernels.F32(batch[1].Out().Data))
	require.Equal(t, []float32{1, 1, 1, 1, 0, 0, 0, 0}, kernels.F32(batch[2].Out().Data),
		"a later launch still runs; the earliest failing launch is the one reported")

	ok := batchOf(oobTake(0, -1))
	require.NoError(t, g.Run(ok))
	require.Equal(t, []float32{1, 1, 1, 1, 128, 128, 128, 128}, kernels.F32(ok[0].Out().Data))
	require.Equal(t, live+9+3, b.prov.liveBuffers(), "the error word is not one of the provider's buffers")
}

// TestEmulatedRunReportsOutOfRangeQEmbed: the quantized embedding reports a token id
// outside the vocabulary through the same word: GPU.Run fails with the Go twin's
// *kernels.LaunchError, and the row is zeros.
func TestEmulatedRunReportsOutOfRangeQEmbed(t *testing.T) {
	g, b := newEmulatedGPU(t, GPUOptions{}, msltest.OrderForward)
	n := 0
	for _, l := range kernels.Samples(rand.New(rand.NewSource(5)))["quant"] {
		if l.Kernel != kernels.KQEmbed {
			continue
		}
		n++
		p := l.Params.(*kernels.QEmbedParams)
		kernels.I32(l.In(0).Data)[0] = int32(p.V)
		c, bufs := onEmulator(t, b.prov, l)
		err := g.Run([]kernels.Launch{c})
		for _, b := range bufs {
			defer b.Release()
		}
		want := fmt.Sprintf("index %d out of range for an axis of length %d", p.V, p.V)
		require.EqualError(t, err, "metal: kernel qembed failed: kernels: qembed: "+want)
		var le *kernels.LaunchError
		require.ErrorAs(t, err, &le)
		require.Equal(t, &kernels.LaunchError{Kernel: "qembed", Msg: want}, le)
		require.Equal(t, make([]float32, p.D), kernels.F32(c.Out().Data)[:p.D])
	}
	require.NotZero(t, n, "qembed samples")
}
