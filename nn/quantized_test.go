package nn_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/kernels"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/tensor"
)

// qtFromFile uploads a tensor of the known-answers file as stored.
func qtFromFile(t *testing.T, g *graph.Graph, s *nn.Safetensors, name string) tensor.Array {
	t.Helper()
	b, info, err := s.Bytes(name)
	require.NoError(t, err)
	dt := map[nn.DType]kernels.DType{nn.F32: kernels.Float32, nn.F16: kernels.Float16, nn.BF16: kernels.BFloat16, nn.U32: kernels.UInt32}[info.DType]
	return tensor.Wrap(g.FromBytes(kernels.Contiguous(dt, info.Shape...), b))
}

func qtValues(t *testing.T, a tensor.Array) []float32 {
	t.Helper()
	v, err := a.Float32s()
	require.NoError(t, err)
	return v
}

// TestQuantizedLinearMatchesMLX runs MLX's own packed matrices through QuantizedLinear.
// For float32, mx.quantized_matmul's outputs are matched within float32 noise: MLX sums
// x*(s*q+b) in one sequence, the kernels group-wise, so the two differ by rounding of
// the terms' magnitudes (16 float32 ulps of sum |x*w|; outputs can cancel to far less). For float16 and
// bfloat16, MLX's CPU kernel computes in the half type, rounding after every operation,
// so its y carries half-precision error: there the test (1) replays that arithmetic
// over the codes read bit by bit from the stream and must reproduce y bit for bit,
// which pins the format, and (2) checks the kernels against the exact float64 value.
func TestQuantizedLinearMatchesMLX(t *testing.T) {
	s := qkaOpen(t)
	g := graph.NewCPU(graph.Options{})
	for _, c := range qkaCases() {
		p := fmt.Sprintf("b%d.g%d.%s.", c.bits, c.group, c.dtype)
		t.Run(p, func(t *testing.T) {
			qw, err := nn.NewQuantizedWeight(qtFromFile(t, g, s, p+"q"), qtFromFile(t, g, s, p+"scales"),
				qtFromFile(t, g, s, p+"biases"), c.bits, c.group)
			require.NoError(t, err)
			l := &nn.QuantizedLinear{QuantizedWeight: qw}
			want, shape, err := s.Float32(p + "y")
			require.NoError(t, err)
			y := l.Forward(qtFromFile(t, g, s, p+"x"))
			require.Equal(t, shape, y.Shape())
			got := qtValues(t, y)
			replay, exact, mag := qtReplayMLX(t, s, p, c)
			noise := func(i int) float64 { return 16 * math.Ldexp(mag[i], -24) }
			if c.st == nn.F32 {
				for i := range want {
					require.InDelta(t, want[i], got[i], noise(i), "element %d", i)
				}
				return
			}
			require.Equal(t, want, replay, "MLX's half-precision arithmetic replayed")
			for i := range exact {
				require.InDelta(t, exact[i], got[i], noise(i), "element %d", i)
			}
		})
	}
}

// qtReplayMLX computes y = x @ dequant(q)^T twice from the file's tensors: rounding
// to the case's half type after every operation, in MLX's order (replay), and in
// float64 (exact), with the sum of the terms' magnitudes (mag).
func qtReplayMLX(t *testing.T, s *nn.Safetensors, p string, c qkaCase) (replay []float32, exact, mag []float64) {
	t.Helper()
	round := func(v float32) float32 {
		if c.st == nn.BF16 {
			return kernels.BF16ToF32(kernels.F32ToBF16(v))
		}
		return kernels.F16ToF32(kernels.F32ToF16(v))
	}
	x, xs, err := s.Float32(p + "x")
	require.NoError(t, err)
	sc, _, err := s.Float32(p + "scales")
	require.NoError(t, err)
	bi, _, err := s.Float32(p + "biases")
	require.NoError(t, err)
	words := qkaWords(t, s, p+"q")
	stream := make([]byte, 4*len(words))
	for i, w := range words {
		binary.LittleEndian.PutUint32(stream[4*i:], w)
	}
	m, k := xs[0], xs[1]
	n := len(sc) * c.group / k
	rowBytes := k * c.bits / 8
	for i := 0; i < m; i++ {
		for r := 0; r < n; r++ {
			sum, ref, abs := float32(0), 0.0, 0.0
			for j := 0; j < k; j++ {
				gi := r*(k/c.group) + j/c.group
				q := float32(streamCode(stream[r*rowBytes:], j, c.bits))
				w := round(round(sc[gi]*q) + bi[gi])
				sum = round(sum + round(x[i*k+j]*w))
				term := float64(x[i*k+j]) * (float64(sc[gi])*float64(q) + float64(bi[gi]))
				ref, abs = ref+term, abs+math.Abs(term)
			}
			replay, exact, mag = append(replay, sum), append(exact, ref), append(mag, abs)
		}
	}
	return replay, exact, mag
}

// qtRandom quantizes a random [rows, cols] matrix and returns it with its dequantized values.
func qtRandom(t *testing.T, rng *rand.Rand, shape []int, bits, group int, st nn.DType) (*nn.QuantizedTensor, []float32) {
	t.Helper()
	n := 1
	for _, d := range shape {
		n *= d
	}
	w := make([]float32, n)
	for i := range w {
		w[i] = float32(rng.NormFloat64() * 0.2)
	}
	qt, err := nn.Quantize(w, shape, bits, group, st)
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
		st          nn.DType
	}{{4, 64, nn.F32}, {6, 64, nn.BF16}, {8, 32, nn.F16}, {3, 128, nn.F32}, {2, 32, nn.F32}, {5, 64, nn.BF16}} {
		t.Run(fmt.Sprintf("%d-%d-%s", c.bits, c.group, c.st), func(t *testing.T) {
			const rows, cols, m = 24, 256, 6
			qt, deq := qtRandom(t, rng, []int{rows, cols}, c.bits, c.group, c.st)
			qw, err := qt.Upload(g)
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
	qt, deq := qtRandom(t, rng, []int{vocab, dim}, 6, 32, nn.BF16)
	qw, err := qt.Upload(g)
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
	gq, gd := qtRandom(t, rng, []int{experts, inter, hidden}, 4, 32, nn.F32)
	uq, ud := qtRandom(t, rng, []int{experts, inter, hidden}, 4, 32, nn.F32)
	dq, dd := qtRandom(t, rng, []int{experts, hidden, inter}, 8, 32, nn.F32)
	up := func(q *nn.QuantizedTensor) nn.QuantizedWeight {
		w, err := q.Upload(g)
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
		return tensor.Wrap(g.FromBytes(kernels.Contiguous(kernels.UInt32, shape...), make([]byte, 4*shape[0]*shape[1])))
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
		_, err := nn.NewQuantizedWeight(c.w, c.s, c.b, c.bits, c.group)
		if c.msg == "" {
			require.NoError(t, err, c.name)
			continue
		}
		require.EqualError(t, err, c.msg, c.name)
	}
}
