package kernels_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/kernels"
)

// gemmGrid encodes a launch of k on shapes under a pipeline limit of limit threads and
// returns its entry and, for a DispatchThreadgroups, its threadgroups and threadgroup
// size (qmm's one-thread-an-output entry dispatches threads).
func gemmGrid(t *testing.T, k *kernels.Kernel, p any, shapes []kernels.Layout, limit int) (string, [3]int, [3]int) {
	t.Helper()
	l := &kernels.Launch{Kernel: k, Params: p, NArgs: len(shapes)}
	for i, s := range shapes {
		l.Args[i] = kernels.Arg{Layout: s}
	}
	r := &gridRecorder{limit: limit}
	k.Encode(l, r)
	if len(r.groups) == 0 {
		return r.entry, [3]int{}, [3]int{}
	}
	require.Len(t, r.groups, 1)
	return r.entry, r.groups[0], r.tpgs[0]
}

// TestGemmEntriesTakePrefill: linear takes the tiled entries from 16 x rows, qmm from 4,
// batches as the grid's z, 256 threads a threadgroup; 128 x 128 tiles (the 8 entries)
// where they number 96 or more, else 64 x 64 (the 4 entries). Fewer rows keep the decode
// entries, and so does a pipeline that takes fewer than 256 threads.
func TestGemmEntriesTakePrefill(t *testing.T) {
	lin := func(batch, m, n, k int) (any, []kernels.Layout) {
		return &kernels.MatmulParams{Batch: batch, M: m, N: n, K: k, XStride: m * k, WStride: n * k},
			[]kernels.Layout{kernels.Contiguous(kernels.Float32, batch, m, k), kernels.Contiguous(kernels.Float32, batch, n, k),
				kernels.Contiguous(kernels.Float32, batch, m, n)}
	}
	for _, c := range []struct {
		batch, m, n, k, limit int
		entry                 string
		groups                [3]int
	}{
		{1, 512, 3584, 1024, 1024, "gemm8_float32", [3]int{28, 4, 1}},   // 112 tiles of 128 x 128
		{1, 512, 1024, 3584, 1024, "gemm4_float32", [3]int{16, 8, 1}},   // 32 would not fill the GPU
		{1, 512, 6144, 1024, 256, "gemm8_float32", [3]int{48, 4, 1}},    // a pipeline of exactly 256
		{3, 16, 65, 8, 1024, "gemm4_float32", [3]int{2, 1, 3}},          // batches
		{96, 16, 8, 8, 1024, "gemm8_float32", [3]int{1, 1, 96}},         // 96 tiles by batch
		{1, 15, 3584, 1024, 1024, "linear_float32", [3]int{896, 15, 1}}, // decode rows
		{1, 512, 3584, 1024, 192, "linear_float32", [3]int{896, 512, 1}},
	} {
		p, s := lin(c.batch, c.m, c.n, c.k)
		e, g, tpg := gemmGrid(t, kernels.KLinear, p, s, c.limit)
		require.Equal(t, c.entry, e, "%+v", c)
		require.Equal(t, c.groups, g, "%+v", c)
		if e != "linear_float32" {
			require.Equal(t, [3]int{256, 1, 1}, tpg, "%+v", c)
		}
	}

	qmm := func(m, n, k int) (any, []kernels.Layout) {
		return &kernels.QuantParams{M: m, N: n, K: k, Bits: 4, Group: 64},
			[]kernels.Layout{kernels.Contiguous(kernels.Float32, m, k), kernels.Contiguous(kernels.UInt32, n, k/8),
				kernels.Contiguous(kernels.BFloat16, n, k/64), kernels.Contiguous(kernels.BFloat16, n, k/64),
				kernels.Contiguous(kernels.Float32, m, n)}
	}
	for _, c := range []struct {
		m, n, k, limit int
		entry          string
		groups         [3]int
	}{
		{512, 1024, 3584, 1024, "qmm_gemm4_bfloat16", [3]int{16, 8, 1}},
		{512, 6144, 1024, 1024, "qmm_gemm8_bfloat16", [3]int{48, 4, 1}},
		{4, 3584, 1024, 1024, "qmm_gemm4_bfloat16", [3]int{56, 1, 1}},
		{3, 3584, 1024, 1024, "qmm_bfloat16", [3]int{}},
		{512, 1024, 3584, 128, "qmm_bfloat16", [3]int{}},
	} {
		p, s := qmm(c.m, c.n, c.k)
		e, g, _ := gemmGrid(t, kernels.KQMM, p, s, c.limit)
		require.Equal(t, c.entry, e, "%+v", c)
		require.Equal(t, c.groups, g, "%+v", c)
	}
}
