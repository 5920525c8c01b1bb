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

// TestGemmEntriesTakePrefill: linear and qmm take the tiled entries (64 x 64 tiles of
// out, 256 threads) from 16 x rows, batches as the grid's z; fewer rows keep the
// decode entries, and so does a pipeline that takes fewer than 256 threads.
func TestGemmEntriesTakePrefill(t *testing.T) {
	lin := func(batch, m, n, k int) (any, []kernels.Layout) {
		return &kernels.MatmulParams{Batch: batch, M: m, N: n, K: k, XStride: m * k, WStride: n * k},
			[]kernels.Layout{kernels.Contiguous(kernels.Float32, batch, m, k), kernels.Contiguous(kernels.Float32, batch, n, k),
				kernels.Contiguous(kernels.Float32, batch, m, n)}
	}
	p, s := lin(1, 512, 3584, 1024)
	e, g, tpg := gemmGrid(t, kernels.KLinear, p, s, 1024)
	require.Equal(t, "gemm_float32", e)
	require.Equal(t, [3]int{56, 8, 1}, g)
	require.Equal(t, [3]int{256, 1, 1}, tpg)
	p, s = lin(3, 16, 65, 8)
	e, g, _ = gemmGrid(t, kernels.KLinear, p, s, 256)
	require.Equal(t, "gemm_float32", e)
	require.Equal(t, [3]int{2, 1, 3}, g)
	p, s = lin(1, 15, 3584, 1024)
	e, g, _ = gemmGrid(t, kernels.KLinear, p, s, 1024)
	require.Equal(t, "linear_float32", e, "15 rows")
	require.Equal(t, [3]int{896, 15, 1}, g)
	p, s = lin(1, 512, 3584, 1024)
	e, _, _ = gemmGrid(t, kernels.KLinear, p, s, 192)
	require.Equal(t, "linear_float32", e, "a pipeline of 192 threads")

	qmm := func(m, n, k int) (any, []kernels.Layout) {
		return &kernels.QuantParams{M: m, N: n, K: k, Bits: 4, Group: 64},
			[]kernels.Layout{kernels.Contiguous(kernels.Float32, m, k), kernels.Contiguous(kernels.UInt32, n, k/8),
				kernels.Contiguous(kernels.BFloat16, n, k/64), kernels.Contiguous(kernels.BFloat16, n, k/64),
				kernels.Contiguous(kernels.Float32, m, n)}
	}
	p, s = qmm(512, 1024, 3584)
	e, g, tpg = gemmGrid(t, kernels.KQMM, p, s, 1024)
	require.Equal(t, "qmm_gemm_bfloat16", e)
	require.Equal(t, [3]int{16, 8, 1}, g)
	require.Equal(t, [3]int{256, 1, 1}, tpg)
	p, s = qmm(15, 1024, 3584)
	e, _, _ = gemmGrid(t, kernels.KQMM, p, s, 1024)
	require.Equal(t, "qmm_bfloat16", e, "15 rows")
	p, s = qmm(512, 1024, 3584)
	e, _, _ = gemmGrid(t, kernels.KQMM, p, s, 128)
	require.Equal(t, "qmm_bfloat16", e, "a pipeline of 128 threads")
}
