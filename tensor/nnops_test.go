package tensor_test

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/tensor"
)

// softmaxAxisRef is the float64 softmax of x along ax; errors scale with each value.
func softmaxAxisRef(x []float64, shape []int, ax int) (want []float64) {
	outer, inner := 1, 1
	for _, d := range shape[:ax] {
		outer *= d
	}
	for _, d := range shape[ax+1:] {
		inner *= d
	}
	n := shape[ax]
	want = make([]float64, len(x))
	for o := 0; o < outer; o++ {
		for i := 0; i < inner; i++ {
			at := func(j int) int { return (o*n+j)*inner + i }
			m := math.Inf(-1)
			for j := 0; j < n; j++ {
				m = math.Max(m, x[at(j)])
			}
			s := 0.0
			for j := 0; j < n; j++ {
				s += math.Exp(x[at(j)] - m)
			}
			for j := 0; j < n; j++ {
				want[at(j)] = math.Exp(x[at(j)]-m) / s
			}
		}
	}
	return want
}

// TestSoftmaxMatchesReference: every axis, contiguous and transposed inputs; the result
// keeps the input's shape; Go twin within 3 float32 roundings of each probability.
func TestSoftmaxMatchesReference(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	rng := rand.New(rand.NewSource(3))
	base, _ := nnRand(g, rng, -6, 6, 3, 5, 8)
	for name, a := range map[string]tensor.Array{"contiguous": base, "transposed": tensor.Transpose(base, 1, 2, 0)} {
		x, shape := nnVals(t, a), a.Shape()
		for ax := -1; ax < 3; ax++ {
			what := fmt.Sprintf("softmax(%s %v, axis %d)", name, shape, ax)
			r := tensor.Softmax(a, ax)
			require.Equal(t, shape, r.Shape(), what)
			require.Equal(t, tensor.Float32, r.DType(), what)
			want := softmaxAxisRef(x, shape, (ax+3)%3)
			nnClose(t, nnVals(t, r), want, want, 2e-7, what)
		}
	}
}

func TestSoftmaxDTypesAndNodes(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	h := tensor.FromValues(g, tensor.Float16, []float64{0, 0, 0, 0, 1, 1}, 3, 2)
	r := tensor.Softmax(h, 0)
	require.Equal(t, tensor.Float16, r.DType())
	// Computed in float32, rounded once to float16 (relative 2^-11).
	want := softmaxAxisRef([]float64{0, 0, 1, 0, 0, 1}, []int{2, 3}, 1)
	nnClose(t, nnVals(t, tensor.Softmax(tensor.Transpose(h), 1)), want, want, 1.0/2048, "float16")
	i := tensor.FromInt32(g, []int32{1, 1}, 2)
	require.Equal(t, tensor.Float32, tensor.Softmax(i, 0).DType())
	x, _ := nnRand(g, rand.New(rand.NewSource(1)), -1, 1, 2, 64)
	require.Equal(t, 1, nnNodes(g, func() { r = tensor.Softmax(x, -1) }))
	// In place: the input is an intermediate nothing else reads, so its buffer is donated.
	y := tensor.Softmax(tensor.MulScalar(x, 2), -1)
	xv := nnVals(t, x)
	for i := range xv {
		xv[i] *= 2
	}
	want = softmaxAxisRef(xv, []int{2, 64}, 1)
	nnClose(t, nnVals(t, y), want, want, 2e-7, "donated softmax")
}

// rmsRef is the float64 (gated) RMS norm of x's rows; z and w may be nil.
func rmsRef(x, z, w []float64, cols int, eps float64) (want, scale []float64) {
	for r := 0; r*cols < len(x); r++ {
		ss := 0.0
		for _, v := range x[r*cols : r*cols+cols] {
			ss += v * v
		}
		s := 1 / math.Sqrt(ss/float64(cols)+eps)
		for c := 0; c < cols; c++ {
			y := x[r*cols+c] * s
			if w != nil {
				y *= w[c]
			}
			if z != nil {
				g := z[r*cols+c]
				y *= g / (1 + math.Exp(-g))
			}
			want = append(want, y)
			scale = append(scale, math.Abs(y)+1e-30)
		}
	}
	return want, scale
}

// TestRMSNormMatchesReference covers both norms, with and without weight, decode and
// odd shapes, transposed x and gate; Go twin within 6 float32 roundings of |y|.
func TestRMSNormMatchesReference(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	rng := rand.New(rand.NewSource(4))
	for _, shape := range [][]int{{1, 64}, {2, 3, 16}, {5, 37}, {1, 1, 4, 16}} {
		cols := shape[len(shape)-1]
		x, xv := nnRand(g, rng, -2, 2, shape...)
		z, zv := nnRand(g, rng, -4, 4, shape...)
		w, wv := nnRand(g, rng, 0.5, 1.5, cols)
		for _, withW := range []bool{true, false} {
			ww, wvv := w, wv
			if !withW {
				ww, wvv = tensor.Array{}, nil
			}
			what := fmt.Sprintf("%v weight %v", shape, withW)
			want, scale := rmsRef(xv, nil, wvv, cols, 1e-6)
			r := tensor.RMSNorm(x, ww, 1e-6)
			require.Equal(t, shape, r.Shape())
			nnClose(t, nnVals(t, r), want, scale, 4e-7, "rms_norm "+what)
			want, scale = rmsRef(xv, zv, wvv, cols, 1e-6)
			nnClose(t, nnVals(t, tensor.GatedRMSNorm(x, z, ww, 1e-6)), want, scale, 4e-7, "gated "+what)
		}
	}
	// Non-contiguous x and gate: a transposed [16, 3] view normalised over its rows of 3.
	x, _ := nnRand(g, rng, -2, 2, 3, 16)
	z, _ := nnRand(g, rng, -4, 4, 3, 16)
	xt, zt := tensor.Transpose(x), tensor.Transpose(z)
	want, scale := rmsRef(nnVals(t, xt), nnVals(t, zt), nil, 3, 1e-5)
	nnClose(t, nnVals(t, tensor.GatedRMSNorm(xt, zt, tensor.Array{}, 1e-5)), want, scale, 4e-7, "transposed")
}

func TestRMSNormDTypesAndNodes(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	x, _ := nnRand(g, rand.New(rand.NewSource(5)), -1, 1, 2, 8)
	wb := tensor.FromValues(g, tensor.BFloat16, []float64{1, 1, 1, 1, 2, 2, 2, 2}, 8)
	require.Equal(t, tensor.Float32, tensor.RMSNorm(x, wb, 1e-6).DType(), "float32 x bf16 w promotes to float32")
	xb := x.AsType(tensor.BFloat16)
	require.Equal(t, tensor.BFloat16, tensor.RMSNorm(xb, wb, 1e-6).DType())
	w, _ := nnRand(g, rand.New(rand.NewSource(6)), 0, 1, 8)
	var r tensor.Array
	require.Equal(t, 1, nnNodes(g, func() { r = tensor.RMSNorm(x, w, 1e-6) }))
	require.Equal(t, 1, nnNodes(g, func() { r = tensor.GatedRMSNorm(x, x, w, 1e-6) }))
	require.NoError(t, tensor.Eval(r))
}

func TestRMSNormShapeErrors(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	x := tensor.Zeros(g, tensor.Float32, 2, 4)
	w3 := tensor.Zeros(g, tensor.Float32, 3)
	z := tensor.Zeros(g, tensor.Float32, 4, 2)
	other := tensor.Zeros(graph.NewCPU(graph.Options{}), tensor.Float32, 4)
	for _, c := range []struct {
		f    func()
		want string
	}{
		{func() { tensor.RMSNorm(x, w3, 1e-6) }, "tensor: rms_norm: weight shape [3] for x shape [2 4] (want [4])"},
		{func() { tensor.RMSNorm(x, other, 1e-6) }, "tensor: rms_norm: arrays from different graphs"},
		{func() { tensor.RMSNorm(x, tensor.Array{}, -1) }, "tensor: rms_norm: eps -1 must be finite and >= 0"},
		{func() { tensor.RMSNorm(tensor.Scalar(g, 1, tensor.Float32), tensor.Array{}, 0) }, "tensor: rms_norm: x must have at least one axis"},
		{func() { tensor.GatedRMSNorm(x, z, tensor.Array{}, 1e-6) }, "tensor: gated_rms_norm: gate shape [4 2] differs from x shape [2 4]"},
		{func() { tensor.GatedRMSNorm(x, tensor.Array{}, tensor.Array{}, 1e-6) }, "tensor: gated_rms_norm: invalid gate"},
	} {
		require.PanicsWithError(t, c.want, c.f)
	}
}

// ropeRef rotates x [B, H, S, D] in float64; a rotated element's error scales with the
// magnitude of its pair.
func ropeRef(x []float64, B, H, S, D, dims int, base float64, offs []int32) (want, scale []float64) {
	want, scale = append([]float64(nil), x...), make([]float64, len(x))
	half := dims / 2
	for b := 0; b < B; b++ {
		for h := 0; h < H; h++ {
			for s := 0; s < S; s++ {
				row := ((b*H+h)*S + s) * D
				for i := 0; i < half; i++ {
					th := (float64(offs[b]) + float64(s)) * math.Pow(base, -2*float64(i)/float64(dims))
					x1, x2 := x[row+i], x[row+i+half]
					want[row+i] = x1*math.Cos(th) - x2*math.Sin(th)
					want[row+i+half] = x1*math.Sin(th) + x2*math.Cos(th)
					// The twin forms the angle in float32 (as MLX and the MSL twin do).
					e := 2 * float64(i) / float64(dims)
					scale[row+i] = (math.Abs(x1) + math.Abs(x2)) * (1 + th*(1+e*math.Log2(base)))
					scale[row+i+half] = scale[row+i]
				}
			}
		}
	}
	return want, scale
}

// TestRoPEMatchesReference: Qwen3.5's layout (x from [B, S, H, D] transposed, partial
// rotation) and full rotation, per-row offsets up to 4000, prefill and decode; the Go
// twin (float32 angles) within a few float32 roundings of the angle-aware scale,
// passed-through dims exact.
func TestRoPEMatchesReference(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	rng := rand.New(rand.NewSource(7))
	for _, c := range []struct {
		B, H, S, D, dims int
		base             float64
		offs             []int32
	}{
		{1, 4, 7, 32, 8, 10000000, []int32{0}},
		{2, 2, 1, 32, 8, 10000000, []int32{5, 4000}},
		{2, 3, 5, 16, 16, 10000, []int32{3990, 17}},
		{1, 2, 3, 10, 6, 500, []int32{1}},
	} {
		what := fmt.Sprintf("%+v", c)
		xbs, _ := nnRand(g, rng, -1, 1, c.B, c.S, c.H, c.D)
		x := tensor.Transpose(xbs, 0, 2, 1, 3) // [B, H, S, D], strided when S > 1
		off := tensor.FromInt32(g, c.offs, c.B)
		r := tensor.RoPE(x, c.dims, c.base, off)
		require.Equal(t, []int{c.B, c.H, c.S, c.D}, r.Shape(), what)
		want, scale := ropeRef(nnVals(t, x), c.B, c.H, c.S, c.D, c.dims, c.base, c.offs)
		nnClose(t, nnVals(t, r), want, scale, 2.4e-7, what)
	}
}

func TestRoPEOffsetsAndNodes(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	rng := rand.New(rand.NewSource(8))
	x, xv := nnRand(g, rng, -1, 1, 2, 2, 1, 8)
	// Offsets of another integer dtype are cast; each batch row uses its own.
	off := tensor.FromValues(g, tensor.UInt32, []float64{0, 9}, 2)
	want, scale := ropeRef(xv, 2, 2, 1, 8, 8, 10000, []int32{0, 9})
	nnClose(t, nnVals(t, tensor.RoPE(x, 8, 10000, off)), want, scale, 2.4e-7, "uint32 offsets")
	require.Equal(t, xv[:16], nnVals(t, tensor.RoPE(x, 8, 10000, off))[:16], "position 0 is the identity")
	o32 := tensor.FromInt32(g, []int32{0, 9}, 2)
	var r tensor.Array
	require.Equal(t, 1, nnNodes(g, func() { r = tensor.RoPE(x, 8, 10000, o32) }), "decode layout needs no copy")
	require.NoError(t, tensor.Eval(r))
}

func TestRoPEShapeErrors(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	x := tensor.Zeros(g, tensor.Float32, 2, 1, 3, 8)
	off := tensor.FromInt32(g, []int32{0, 0}, 2)
	for _, c := range []struct {
		f    func()
		want string
	}{
		{func() { tensor.RoPE(tensor.Zeros(g, tensor.Float32, 3, 8), 8, 1e4, off) }, "tensor: rope: x must be [B, H, S, D], got [3 8]"},
		{func() { tensor.RoPE(x, 7, 1e4, off) }, "tensor: rope: dims 7 must be even, positive and <= head dim 8"},
		{func() { tensor.RoPE(x, 10, 1e4, off) }, "tensor: rope: dims 10 must be even, positive and <= head dim 8"},
		{func() { tensor.RoPE(x, 8, 0, off) }, "tensor: rope: base 0 must be finite and > 0"},
		{func() { tensor.RoPE(x, 8, 1e4, tensor.FromInt32(g, []int32{0}, 1)) }, "tensor: rope: offsets shape [1] for batch 2 (want [2])"},
		{func() { tensor.RoPE(x, 8, 1e4, tensor.Zeros(g, tensor.Float32, 2)) }, "tensor: rope: offsets must be integers, got float32"},
		{func() { tensor.RoPE(x, 8, 1e4, tensor.Array{}) }, "tensor: rope: invalid array"},
	} {
		require.PanicsWithError(t, c.want, c.f)
	}
}
