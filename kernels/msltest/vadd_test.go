package msltest

import (
	"encoding/binary"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// params mirrors struct Params in testdata/vadd.metal.
func params(n, strideA, strideOut uint32, scale float32) []byte {
	le := binary.LittleEndian
	b := le.AppendUint32(nil, n)
	b = le.AppendUint32(b, strideA)
	b = le.AppendUint32(b, strideOut)
	return le.AppendUint32(b, math.Float32bits(scale))
}

func f32s(t *testing.T, b []byte) []float32 {
	t.Helper()
	v, err := Values[float32](b)
	require.NoError(t, err)
	return v
}

func TestStridedAddPartialGroups(t *testing.T) {
	RequireCompiler(t)
	t.Parallel()
	const n, sa, so = 1000, 3, 2
	a := make([]float32, n*sa)
	b := make([]float32, n)
	for i := range a {
		a[i] = float32(i)*0.25 - 7
	}
	for i := range b {
		b[i] = float32(i%17) * 1.5
	}
	// Sentinels: the gaps of the strided output must stay untouched.
	out := make([]float32, n*so)
	for i := range out {
		out[i] = -1234.5
	}
	bufs := []Buffer{
		{Index: 0, Data: Bytes(a)},
		{Index: 1, Data: Bytes(b)},
		{Index: 2, Data: Bytes(out)},
		{Index: 3, Data: params(n, sa, so, 0.5)},
	}
	// 1000 threads in groups of 96: the last group has 40 threads.
	d := Dispatch{Threads: [3]int{n, 1, 1}, Group: [3]int{96, 1, 1}}
	require.NoError(t, Run("testdata/vadd.metal", "strided_add", d, bufs))
	got := f32s(t, bufs[2].Data)
	for i := range n * so {
		want := float32(-1234.5)
		if i%so == 0 {
			j := i / so
			want = float32(a[j*sa]*0.5) + b[j]
		}
		require.Equalf(t, want, got[i], "out[%d]", i)
	}
	// The inputs come back unchanged.
	require.Equal(t, Bytes(a), bufs[0].Data)
}

func TestFloat4RowsThreadgroups(t *testing.T) {
	RequireCompiler(t)
	t.Parallel()
	const rows, cols4, pitch4 = 6, 8, 10 // two float4 of padding per row
	m := make([]float32, rows*pitch4*4)
	for i := range m {
		m[i] = float32(i) - 100
	}
	bias := make([]float32, cols4*4)
	for i := range bias {
		bias[i] = float32(i) * 0.75
	}
	bufs := []Buffer{
		{Index: 0, Data: Bytes(m)},
		{Index: 1, Data: Bytes(bias)},
		{Index: 2, Data: Bytes([]uint32{pitch4})},
	}
	d := Dispatch{Groups: [3]int{2, 3, 1}, Group: [3]int{4, 2, 1}}
	require.NoError(t, Run("testdata/vadd.metal", "bias_rows4", d, bufs))
	got := f32s(t, bufs[0].Data)
	for r := range rows {
		for c := range pitch4 * 4 {
			i := r*pitch4*4 + c
			want := m[i]
			if c < cols4*4 {
				want = m[i] + (float32(bias[c]*0.5) + 1)
			}
			require.Equalf(t, want, got[i], "row %d col %d", r, c)
		}
	}
}
