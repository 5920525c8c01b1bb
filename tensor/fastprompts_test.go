package tensor_test

import (
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/kernels"
	"github.com/ingotml/ingot/tensor"
)

// TestFastPromptsTakeOnlyPrompts: with graph.Options.FastPrompts, a prompt's quantized
// product (x [B, L, K], L >= 2) takes the int8 path, near the float path's values but
// not equal to them, and each prompt of a batch gets the bits it gets alone; a decode
// step (L = 1, any B) and a 2-D x keep the float path's bits.
func TestFastPromptsQuantized(t *testing.T) {
	if i8, _ := kernels.FastPromptPaths(); !i8 {
		t.Skip("no AVX512-VNNI: FastPrompts changes nothing here")
	}
	const n, k, group, L = 40, 256, 64, 7
	rng := rand.New(rand.NewSource(11))
	words := make([]float64, n*k/8)
	for i := range words {
		words[i] = float64(rng.Uint32())
	}
	sc, bi := make([]float32, n*k/group), make([]float32, n*k/group)
	for i := range sc {
		sc[i], bi[i] = float32(0.01+0.02*rng.Float64()), float32(rng.Float64()-0.5)
	}
	xv := make([]float32, 2*L*k)
	for i := range xv {
		xv[i] = float32(rng.NormFloat64())
	}
	run := func(int8 bool, shape ...int) []float32 {
		g := graph.NewCPU(graph.Options{FastPrompts: int8})
		q, err := tensor.NewQuantizedWeight(tensor.FromValues(g, tensor.UInt32, words, n, k/8),
			tensor.FromFloat32(g, sc, n, k/group), tensor.FromFloat32(g, bi, n, k/group), 4, group)
		require.NoError(t, err)
		size := 1
		for _, d := range shape {
			size *= d
		}
		out, err := tensor.QuantizedMatmul(tensor.FromFloat32(g, xv[:size], shape...), q).Float32s()
		require.NoError(t, err)
		return out
	}
	require.Equal(t, bits(run(false, 2*L, 1, k)), bits(run(true, 2*L, 1, k)), "a decode step of 14 rows")
	require.Equal(t, bits(run(false, 2*L, k)), bits(run(true, 2*L, k)), "a 2-D x")

	flt, q8 := run(false, 2, L, k), run(true, 2, L, k)
	differ, worst, scale := 0, 0.0, 0.0
	for i := range flt {
		if flt[i] != q8[i] {
			differ++
		}
		worst = math.Max(worst, math.Abs(float64(flt[i]-q8[i])))
		scale = math.Max(scale, math.Abs(float64(flt[i])))
	}
	require.Greater(t, differ, len(flt)/2, "a prompt takes the int8 path")
	require.Less(t, worst, 1e-2*scale, "the int8 path stays near the float path")
	alone := run(true, 1, L, k)
	require.Equal(t, bits(alone), bits(q8[:L*n]), "the first prompt of the batch gets its bits alone")
}

// bits is v's float32 bit patterns (NaN payloads kept: equal bits, not equal values).
func bits(v []float32) []uint32 {
	b := make([]uint32, len(v))
	for i, f := range v {
		b[i] = math.Float32bits(f)
	}
	return b
}

// TestFastPromptsBFloat16: with graph.Options.FastPrompts, a bfloat16 prompt's linear
// (x [B, L, K], L >= 2) takes the pair-dot path: the same products summed in another
// order, which the bfloat16 output rounding mostly hides, so weight row 0 and each
// prompt's first token are made to show it: 2^20 + 2^-10 - 2^20, where the float path
// keeps 2^-10 (its lane 0 adds k = 0 and k = 16 first) and the pair-dot path, adding in
// K order, loses it. Each prompt of a batch gets its bits alone; a decode step and a
// 2-D x keep the float path's bits.
func TestFastPromptsBFloat16(t *testing.T) {
	if _, bf := kernels.FastPromptPaths(); !bf {
		t.Skip("no AVX512_BF16: FastPrompts changes nothing for bfloat16 here")
	}
	const n, k, L = 48, 512, 6
	rng := rand.New(rand.NewSource(12))
	wv, xv := make([]float32, n*k), make([]float32, 2*L*k)
	for i := range wv {
		wv[i] = float32(rng.NormFloat64())
	}
	for i := range xv {
		xv[i] = float32(rng.NormFloat64())
	}
	clear(wv[:k])
	wv[0], wv[1], wv[16] = 1024, 1.0/32, 1024
	for _, t := range []int{0, L} { // the first token of each prompt
		clear(xv[t*k : (t+1)*k])
		xv[t*k], xv[t*k+1], xv[t*k+16] = 1024, 1.0/32, -1024
	}
	run := func(fast bool, shape ...int) []float32 {
		g := graph.NewCPU(graph.Options{FastPrompts: fast})
		size := 1
		for _, d := range shape {
			size *= d
		}
		w := tensor.FromFloat32(g, wv, n, k).AsType(tensor.BFloat16)
		x := tensor.FromFloat32(g, xv[:size], shape...).AsType(tensor.BFloat16)
		out, err := tensor.Linear(x, w).AsType(tensor.Float32).Float32s()
		require.NoError(t, err)
		return out
	}
	require.Equal(t, bits(run(false, 2*L, 1, k)), bits(run(true, 2*L, 1, k)), "a decode step of 12 rows")
	require.Equal(t, bits(run(false, 2*L, k)), bits(run(true, 2*L, k)), "a 2-D x")
	flt, fast := run(false, 2, L, k), run(true, 2, L, k)
	differ := 0
	for i := range flt {
		if flt[i] != fast[i] {
			differ++
			if i%(L*n) != 0 {
				require.InDelta(t, flt[i], fast[i], 1.0/64*math.Abs(float64(flt[i])), "value %d: one bfloat16 ulp at most", i)
			}
		}
	}
	require.Equal(t, float32(1.0/1024), flt[0], "the float path keeps 2^-10")
	require.Equal(t, float32(0), fast[0], "the pair-dot path adds in K order")
	require.Positive(t, differ)
	require.Equal(t, bits(run(true, 1, L, k)), bits(fast[:L*n]), "the first prompt of the batch gets its bits alone")
}
