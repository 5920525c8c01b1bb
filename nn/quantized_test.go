package nn_test

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/ingotml/ingot/nn/checkpoint"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/kernels"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/tensor"
)

func qtValues(t *testing.T, a tensor.Array) []float32 {
	t.Helper()
	v, err := a.Float32s()
	require.NoError(t, err)
	return v
}

func qtRandom(t *testing.T, rng *rand.Rand, shape []int, bits, group int, st checkpoint.DType) (*checkpoint.QuantizedTensor, []float32) {
	t.Helper()
	n := 1
	for _, d := range shape {
		n *= d
	}
	w := make([]float32, n)
	for i := range w {
		w[i] = float32(rng.NormFloat64() * 0.2)
	}
	qt, err := checkpoint.Quantize(w, shape, bits, group, st)
	require.NoError(t, err)
	deq, err := qt.Dequantize()
	require.NoError(t, err)
	return qt, deq
}

// qtClose compares a quantized layer's output with the float layer on the dequantized
// weights: the same products summed in another order (group-wise), so within 1e-5.
func qtClose(t *testing.T, want, got []float32) {
	t.Helper()
	require.Len(t, got, len(want))
	for i := range want {
		require.InDelta(t, want[i], got[i], 1e-5*math.Max(1, math.Abs(float64(want[i]))), "element %d", i)
	}
}

// TestQuantizedLinearEqualsDequantizedLinear: decode (qmv) and prefill (qmm) rows agree
// with Linear on the dequantized weight, and with each other bit for bit.
func TestQuantizedLinearEqualsDequantizedLinear(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	g := graph.NewCPU(graph.Options{})
	for _, c := range []struct {
		bits, group int
		st          checkpoint.DType
	}{{4, 64, checkpoint.F32}, {6, 64, checkpoint.BF16}, {8, 32, checkpoint.F16}, {3, 128, checkpoint.F32}, {2, 32, checkpoint.F32}, {5, 64, checkpoint.BF16}} {
		t.Run(fmt.Sprintf("%d-%d-%s", c.bits, c.group, c.st), func(t *testing.T) {
			const rows, cols, m = 24, 256, 6
			qt, deq := qtRandom(t, rng, []int{rows, cols}, c.bits, c.group, c.st)
			qw, err := nn.UploadQuantized(g, qt)
			require.NoError(t, err)
			assert.Equal(t, []int{rows, cols}, qw.Shape())
			ql := &nn.QuantizedLinear{QuantizedWeight: qw}
			fl := &nn.Linear{Weight: tensor.FromFloat32(g, deq, rows, cols)}
			xv := make([]float32, m*cols)
			for i := range xv {
				xv[i] = float32(rng.NormFloat64())
			}
			x := tensor.FromFloat32(g, xv, 2, m/2, cols)
			prefill := qtValues(t, ql.Forward(x))
			qtClose(t, qtValues(t, fl.Forward(x)), prefill)
			for r := 0; r < m; r++ {
				row := tensor.FromFloat32(g, xv[r*cols:(r+1)*cols], 1, cols)
				require.Equal(t, prefill[r*rows:(r+1)*rows], qtValues(t, ql.Forward(row)), "row %d: qmv and qmm differ", r)
			}
		})
	}
}

func TestQuantizedEmbedding(t *testing.T) {
	rng := rand.New(rand.NewSource(4))
	g := graph.NewCPU(graph.Options{})
	const vocab, dim = 10, 64
	qt, deq := qtRandom(t, rng, []int{vocab, dim}, 6, 32, checkpoint.BF16)
	qw, err := nn.UploadQuantized(g, qt)
	require.NoError(t, err)
	e := &nn.QuantizedEmbedding{QuantizedWeight: qw}
	ids := []int32{3, 0, 9, -1}
	y := e.Forward(tensor.FromInt32(g, ids, 4))
	require.Equal(t, []int{4, dim}, y.Shape())
	got := qtValues(t, y)
	for i, id := range ids {
		row := got[i*dim : (i+1)*dim]
		switch {
		case id < 0:
			assert.Equal(t, deq[(vocab-1)*dim:], row)
		default:
			assert.Equal(t, deq[int(id)*dim:(int(id)+1)*dim], row, "id %d", id)
		}
	}
	// A token outside the vocabulary is an error, as Take makes it, not a zero row.
	_, err = e.Forward(tensor.FromInt32(g, []int32{2, vocab}, 2)).Float32s()
	require.ErrorContains(t, err, "kernels: qembed: index 10 out of range for an axis of length 10")

	// The tied head reads the same packed matrix as a QuantizedLinear would.
	xv := make([]float32, 3*dim)
	for i := range xv {
		xv[i] = float32(rng.NormFloat64())
	}
	x := tensor.FromFloat32(g, xv, 3, dim)
	head := qtValues(t, e.AsLinear(x))
	require.Equal(t, qtValues(t, (&nn.QuantizedLinear{QuantizedWeight: qw}).Forward(x)), head)
	qtClose(t, qtValues(t, (&nn.Embedding{Weight: tensor.FromFloat32(g, deq, vocab, dim)}).AsLinear(x)), head)
}

func TestQuantizedSwitchGLUEqualsDequantized(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	g := graph.NewCPU(graph.Options{})
	const experts, inter, hidden, tokens, k = 4, 32, 64, 3, 2
	gq, gd := qtRandom(t, rng, []int{experts, inter, hidden}, 4, 32, checkpoint.F32)
	uq, ud := qtRandom(t, rng, []int{experts, inter, hidden}, 4, 32, checkpoint.F32)
	dq, dd := qtRandom(t, rng, []int{experts, hidden, inter}, 8, 32, checkpoint.F32)
	up := func(q *checkpoint.QuantizedTensor) tensor.QuantizedWeight {
		w, err := nn.UploadQuantized(g, q)
		require.NoError(t, err)
		return w
	}
	qs := &nn.QuantizedSwitchGLU{Gate: up(gq), Up: up(uq), Down: up(dq)}
	fs := &nn.SwitchGLU{Gate: tensor.FromFloat32(g, gd, experts, inter, hidden),
		Up: tensor.FromFloat32(g, ud, experts, inter, hidden), Down: tensor.FromFloat32(g, dd, experts, hidden, inter)}
	xv := make([]float32, tokens*hidden)
	for i := range xv {
		xv[i] = float32(rng.NormFloat64())
	}
	x := tensor.FromFloat32(g, xv, 1, tokens, hidden)
	idx := tensor.FromInt32(g, []int32{0, 3, 2, 1, 3, 3}, 1, tokens, k)
	sc := tensor.FromFloat32(g, []float32{0.7, 0.3, 0.5, 0.5, 1, 0.25}, 1, tokens, k)
	qtClose(t, qtValues(t, fs.Forward(x, idx, sc)), qtValues(t, qs.Forward(x, idx, sc)))
}

func TestNewQuantizedWeightErrors(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	u32 := func(shape ...int) tensor.Array {
		return tensor.FromBytes(g, kernels.UInt32, make([]byte, 4*shape[0]*shape[1]), shape...)
	}
	f32 := func(shape ...int) tensor.Array {
		return tensor.FromFloat32(g, make([]float32, shape[0]*shape[1]), shape...)
	}
	for _, c := range []struct {
		name    string
		w, s, b tensor.Array
		bits    int
		group   int
		msg     string
	}{
		{"ok", u32(4, 8), f32(4, 1), f32(4, 1), 4, 64, ""},
		{"float weight", f32(4, 8), f32(4, 1), f32(4, 1), 4, 64, "quantized weight: dtype float32, want uint32"},
		{"bits do not fit", u32(4, 8), f32(4, 1), f32(4, 1), 6, 64, "quantized weight: weight [4 8] and scales [4 1] do not fit 6 bits, group 64"},
		{"groups do not fit", u32(4, 8), f32(4, 2), f32(4, 2), 4, 64, "quantized weight: weight [4 8] and scales [4 2] do not fit 4 bits, group 64"},
		{"rows differ", u32(4, 8), f32(3, 1), f32(3, 1), 4, 64, "quantized weight: weight [4 8], scales [3 1], biases [3 1]: want [..., rows, words] and [..., rows, groups]"},
		{"bad bits", u32(4, 7), f32(4, 1), f32(4, 1), 7, 32, "quantized weight: weight [4 7] and scales [4 1] do not fit 7 bits, group 32"},
	} {
		_, err := tensor.NewQuantizedWeight(c.w, c.s, c.b, c.bits, c.group)
		if c.msg == "" {
			require.NoError(t, err, c.name)
			continue
		}
		require.EqualError(t, err, c.msg, c.name)
	}
}
