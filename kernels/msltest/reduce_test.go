package msltest

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// pairwise reduces v the way msltest's SIMD reductions do: adjacent pairs,
// then pairs of pairs, in lane order.
func pairwise(v []float32) float32 {
	v = append([]float32(nil), v...)
	for stride := 1; stride < len(v); stride *= 2 {
		for i := 0; i+stride < len(v); i += 2 * stride {
			v[i] += v[i+stride]
		}
	}
	return v[0]
}

func ramp(n int, f func(i int) float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = f(i)
	}
	return v
}

func TestRowSumSimd(t *testing.T) {
	RequireCompiler(t)
	t.Parallel()
	const rows, cols = 12, 100
	x := ramp(rows*cols, func(i int) float32 { return float32((i*37)%101)*0.125 - 3 })
	bufs := []Buffer{
		{Index: 0, Data: Bytes(x)},
		{Index: 1, Data: make([]byte, 4*rows)},
		{Index: 2, Data: make([]byte, 4*rows)},
		{Index: 3, Data: Bytes([]uint32{cols})},
	}
	d := Dispatch{Threads: [3]int{32, rows, 1}, Group: [3]int{32, 4, 1}}
	require.NoError(t, Run("testdata/reduce.metal", "row_sum", d, bufs))
	sums, maxes := f32s(t, bufs[1].Data), f32s(t, bufs[2].Data)
	for r := range rows {
		lanes := make([]float32, 32)
		m := float32(math.Inf(-1))
		for c := range cols {
			v := x[r*cols+c]
			lanes[c%32] += v
			m = max(m, v)
		}
		require.Equalf(t, pairwise(lanes), sums[r], "sum of row %d", r)
		require.Equalf(t, m, maxes[r], "max of row %d", r)
	}
}

func TestTreeSumBarriers(t *testing.T) {
	RequireCompiler(t)
	t.Parallel()
	const groups = 5
	x := ramp(groups*64, func(i int) float32 { return float32(i%23)*0.3 + float32(i)/64 })
	bufs := []Buffer{{Index: 0, Data: Bytes(x)}, {Index: 1, Data: make([]byte, 4*groups)}}
	d := Dispatch{Groups: [3]int{groups, 1, 1}, Group: [3]int{64, 1, 1}}
	require.NoError(t, Run("testdata/reduce.metal", "tree_sum", d, bufs))
	got := f32s(t, bufs[1].Data)
	for g := range groups {
		buf := append([]float32(nil), x[g*64:(g+1)*64]...)
		for s := 32; s > 0; s /= 2 {
			for i := range s {
				buf[i] += buf[i+s]
			}
		}
		require.Equalf(t, buf[0], got[g], "group %d", g)
	}
}

func TestSimdTreeSumPartialSimdgroups(t *testing.T) {
	RequireCompiler(t)
	t.Parallel()
	// 200 threads in groups of 96: groups of 96, 96 and 8 threads, the
	// last one a single partial simdgroup of 8 lanes.
	const n, group = 200, 96
	x := ramp(n, func(i int) float32 { return float32(i%13) - 5.5 })
	ngroups := (n + group - 1) / group
	bufs := []Buffer{{Index: 0, Data: Bytes(x)}, {Index: 1, Data: make([]byte, 4*ngroups)}}
	d := Dispatch{Threads: [3]int{n, 1, 1}, Group: [3]int{group, 1, 1}}
	require.NoError(t, Run("testdata/reduce.metal", "simd_tree_sum", d, bufs))
	got := f32s(t, bufs[1].Data)
	for g := range ngroups {
		lo, hi := g*group, min(n, (g+1)*group)
		partials := make([]float32, 32) // lanes past nsg add 0
		for s := 0; lo+s*32 < hi; s++ {
			partials[s] = pairwise(x[lo+s*32 : min(hi, lo+(s+1)*32)])
		}
		require.Equalf(t, pairwise(partials), got[g], "group %d", g)
	}
}

func TestShuffles(t *testing.T) {
	RequireCompiler(t)
	t.Parallel()
	const n, group, delta = 128, 64, 3
	x := ramp(n, func(i int) float32 { return float32(i*i%97) + 0.5 })
	bufs := []Buffer{
		{Index: 0, Data: Bytes(x)},
		{Index: 1, Data: make([]byte, 4*n)},
		{Index: 2, Data: make([]byte, 4*n)},
		{Index: 3, Data: make([]byte, 4*n/32)},
		{Index: 4, Data: make([]byte, 4*n)},
		{Index: 5, Data: Bytes([]uint16{delta})},
	}
	d := Dispatch{Threads: [3]int{n, 1, 1}, Group: [3]int{group, 1, 1}}
	require.NoError(t, Run("testdata/reduce.metal", "shuffles", d, bufs))
	down, xor1, red := f32s(t, bufs[1].Data), f32s(t, bufs[2].Data), f32s(t, bufs[3].Data)
	prefix, err := Values[uint32](bufs[4].Data)
	require.NoError(t, err)
	for i := range n {
		lane := i % 32
		wantDown := x[i] // Metal leaves the top delta lanes unchanged
		if lane+delta < 32 {
			wantDown = x[i+delta]
		}
		require.Equalf(t, wantDown, down[i], "shuffle_down at %d", i)
		require.Equalf(t, x[i^1], xor1[i], "shuffle_xor at %d", i)
		require.Equalf(t, uint32(lane*(lane+1)/2), prefix[i], "prefix sum at %d", i)
	}
	for s := range n / 32 {
		r := append([]float32(nil), x[s*32:(s+1)*32]...)
		for off := 16; off > 0; off /= 2 {
			next := make([]float32, 32)
			for l := range 32 {
				src := l
				if l+off < 32 {
					src = l + off
				}
				next[l] = r[l] + r[src]
			}
			r = next
		}
		require.Equalf(t, r[0], red[s], "shuffle-down reduction of simdgroup %d", s)
	}
}

func TestUnwrittenThreadgroupMemoryIsNaN(t *testing.T) {
	RequireCompiler(t)
	t.Parallel()
	bufs := []Buffer{{Index: 0, Data: make([]byte, 4*8)}}
	d := Dispatch{Groups: [3]int{1, 1, 1}, Group: [3]int{8, 1, 1}}
	require.NoError(t, Run("testdata/reduce.metal", "read_unwritten", d, bufs))
	got, err := Values[uint32](bufs[0].Data)
	require.NoError(t, err)
	require.Equal(t, math.Float32bits(1), got[0])
	for i := 1; i < 8; i++ {
		require.Equalf(t, uint32(0xFFFFFFFF), got[i], "scratch[%d]", i)
	}
}
