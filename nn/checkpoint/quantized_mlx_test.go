package checkpoint_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/kernels"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/checkpoint"
	"github.com/ingotml/ingot/tensor"
	"github.com/stretchr/testify/require"
)

// qtFromFile uploads a tensor of the known-answers file as stored.
func qtFromFile(t *testing.T, g *graph.Graph, s *checkpoint.Safetensors, name string) tensor.Array {
	t.Helper()
	b, info, err := s.Bytes(name)
	require.NoError(t, err)
	dt := map[checkpoint.DType]kernels.DType{checkpoint.F32: kernels.Float32, checkpoint.F16: kernels.Float16, checkpoint.BF16: kernels.BFloat16, checkpoint.U32: kernels.UInt32}[info.DType]
	return tensor.FromBytes(g, dt, b, info.Shape...)
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
			qw, err := tensor.NewQuantizedWeight(qtFromFile(t, g, s, p+"q"), qtFromFile(t, g, s, p+"scales"),
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
			if c.st == checkpoint.F32 {
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
func qtReplayMLX(t *testing.T, s *checkpoint.Safetensors, p string, c qkaCase) (replay []float32, exact, mag []float64) {
	t.Helper()
	round := func(v float32) float32 {
		if c.st == checkpoint.BF16 {
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
