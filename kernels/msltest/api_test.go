package msltest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestDispatchErrors(t *testing.T) {
	// Checked before anything is compiled.
	cases := []struct {
		d   Dispatch
		err string
	}{
		{Dispatch{Group: [3]int{1, 1, 1}}, "msltest: Dispatch has neither Threads nor Groups"},
		{Dispatch{Threads: [3]int{8, 0, 1}, Group: [3]int{8, 1, 1}}, "msltest: Dispatch.Threads[1] is 0; use 1 for an unused dimension"},
		{Dispatch{Groups: [3]int{2, 1, -1}, Group: [3]int{8, 1, 1}}, "msltest: Dispatch.Groups[2] is -1; use 1 for an unused dimension"},
		{Dispatch{Threads: [3]int{8, 1, 1}, Group: [3]int{8, 1}}, "msltest: Dispatch.Group[2] is 0; use 1 for an unused dimension"},
		{Dispatch{Threads: [3]int{8, 1, 1}, Group: [3]int{64, 32, 1}}, "msltest: Dispatch.Group [64 32 1] has 2048 threads; Metal allows at most 1024"},
	}
	for _, c := range cases {
		_, _, _, err := c.d.normalize()
		require.EqualError(t, err, c.err)
	}
	mode, grid, group, err := Dispatch{Groups: [3]int{3, 2, 1}, Group: [3]int{32, 4, 1}}.normalize()
	require.NoError(t, err)
	require.Equal(t, uint32(1), mode)
	require.Equal(t, [3]uint32{3, 2, 1}, grid)
	require.Equal(t, [3]uint32{32, 4, 1}, group)
}

func TestRunErrors(t *testing.T) {
	RequireCompiler(t)
	t.Parallel()
	d := Dispatch{Threads: [3]int{4, 1, 1}, Group: [3]int{4, 1, 1}}
	four := func() []byte { return make([]byte, 16) }
	full := func() []Buffer {
		return []Buffer{{Index: 0, Data: four()}, {Index: 1, Data: four()}, {Index: 2, Data: four()}, {Index: 3, Data: params(4, 1, 1, 1)}}
	}

	err := Run("testdata/vadd.metal", "nope", d, nil)
	require.ErrorIs(t, err, ErrKernelNotFound)
	require.EqualError(t, err, `msltest: kernel not found: "nope" in testdata/vadd.metal (it has: bias_rows4, strided_add)`)

	require.EqualError(t, Run("testdata/vadd.metal", "strided_add", d, full()[:3]),
		"msltest: kernel strided_add: no Buffer for [[buffer(3)]] (parameter p)")
	require.EqualError(t, Run("testdata/vadd.metal", "strided_add", d, append(full(), Buffer{Index: 7, Data: four()})),
		"msltest: kernel strided_add has no [[buffer(7)]] parameter")
	require.EqualError(t, Run("testdata/vadd.metal", "strided_add", d, append(full(), Buffer{Index: 1, Data: four()})),
		"msltest: two buffers have Index 1")
	require.EqualError(t, Run("testdata/vadd.metal", "strided_add", d, append(full(), Buffer{Index: 31})),
		"msltest: Buffer index 31 is not in 0..30")
	require.ErrorContains(t, Run("testdata/missing.metal", "k", d, nil), "msltest: open testdata/missing.metal: no such file")

	// Too short a Params struct: the kernel reads past the end of buffer 3.
	bufs := full()
	bufs[3].Data = bufs[3].Data[:8]
	var re *RunError
	require.ErrorAs(t, Run("testdata/vadd.metal", "strided_add", d, bufs), &re)
	require.Equal(t, "msltest: kernel strided_add: out-of-bounds access to buffer(3) at byte offset 8 (buffer is 8 bytes) (thread_position_in_grid 0,0,0)", re.Output)
}

func TestBytesValues(t *testing.T) {
	b := Bytes([]float32{1, -2.5})
	require.Equal(t, []byte{0, 0, 0x80, 0x3f, 0, 0, 0x20, 0xc0}, b)
	v, err := Values[float32](b)
	require.NoError(t, err)
	require.Equal(t, []float32{1, -2.5}, v)
	_, err = Values[uint32](b[:6])
	require.EqualError(t, err, "msltest: 6 bytes is not a whole number of 4-byte values")
}
