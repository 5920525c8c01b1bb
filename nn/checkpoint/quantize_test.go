package checkpoint_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/internal/golden"
	"github.com/ingotml/ingot/kernels"
	"github.com/ingotml/ingot/nn/checkpoint"
)

// qkaCase is one bits x group x dtype case of MLX's known answers.
type qkaCase struct {
	bits, group int
	dtype       string
	st          checkpoint.DType
}

func qkaCases() []qkaCase {
	var out []qkaCase
	for _, b := range []int{2, 3, 4, 5, 6, 8} {
		for _, g := range []int{32, 64, 128} {
			for _, d := range []struct {
				name string
				st   checkpoint.DType
			}{{"float32", checkpoint.F32}, {"float16", checkpoint.F16}, {"bfloat16", checkpoint.BF16}} {
				out = append(out, qkaCase{b, g, d.name, d.st})
			}
		}
	}
	return out
}

func qkaOpen(t *testing.T) *checkpoint.Safetensors {
	t.Helper()
	s, err := checkpoint.ReadSafetensors(filepath.Join(golden.MLXRoot(), "mlx_quantize_known_answers.safetensors"))
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

func qkaWords(t *testing.T, s *checkpoint.Safetensors, name string) []uint32 {
	t.Helper()
	b, info, err := s.Bytes(name)
	require.NoError(t, err)
	require.Equal(t, checkpoint.U32, info.DType, name)
	out := make([]uint32, len(b)/4)
	for i := range out {
		out[i] = binary.LittleEndian.Uint32(b[4*i:])
	}
	return out
}

// TestQuantizeMatchesMLX: the quantizer reproduces mx.quantize's packed words, scales
// and biases bit for bit for every bits x group x dtype case.
func TestQuantizeMatchesMLX(t *testing.T) {
	s := qkaOpen(t)
	for _, c := range qkaCases() {
		p := fmt.Sprintf("b%d.g%d.%s.", c.bits, c.group, c.dtype)
		t.Run(p, func(t *testing.T) {
			w, shape, err := s.Float32(p + "w")
			require.NoError(t, err)
			qt, err := checkpoint.Quantize(w, shape, c.bits, c.group, c.st)
			require.NoError(t, err)
			assert.Equal(t, qkaWords(t, s, p+"q"), qt.Weight, "packed words")
			scales, biases := qkaScalesBiases(t, s, p, c.st)
			assert.Equal(t, scales, qt.Scales, "scales")
			assert.Equal(t, biases, qt.Biases, "biases")
		})
	}
}

// qkaScalesBiases reads case p's scales and biases (raw bytes of dtype st).
func qkaScalesBiases(t *testing.T, s *checkpoint.Safetensors, p string, st checkpoint.DType) (scales, biases []byte) {
	t.Helper()
	scales, sinfo, err := s.Bytes(p + "scales")
	require.NoError(t, err)
	require.Equal(t, st, sinfo.DType)
	biases, _, err = s.Bytes(p + "biases")
	require.NoError(t, err)
	return scales, biases
}

// qkaULP is the spacing of dtype's values near 1 (float32, float16, bfloat16).
func qkaULP(dt checkpoint.DType) float64 {
	switch dt {
	case checkpoint.F16:
		return math.Ldexp(1, -10)
	case checkpoint.BF16:
		return math.Ldexp(1, -7)
	}
	return math.Ldexp(1, -23)
}

// TestDequantizeMatchesMLX: dequantizing MLX's own q/scales/biases agrees with
// mx.dequantize within a few ulps of the dtype (MLX rounds its result to the dtype).
func TestDequantizeMatchesMLX(t *testing.T) {
	s := qkaOpen(t)
	for _, c := range qkaCases() {
		p := fmt.Sprintf("b%d.g%d.%s.", c.bits, c.group, c.dtype)
		t.Run(p, func(t *testing.T) {
			want, shape, err := s.Float32(p + "dequantized")
			require.NoError(t, err)
			scales, biases := qkaScalesBiases(t, s, p, c.st)
			qt := &checkpoint.QuantizedTensor{Shape: shape, Bits: c.bits, GroupSize: c.group,
				Weight: qkaWords(t, s, p+"q"), Scales: scales, Biases: biases, ScaleType: c.st}
			got, err := qt.Dequantize()
			require.NoError(t, err)
			require.Len(t, got, len(want))
			for i := range want {
				tol := 2 * qkaULP(c.st) * math.Max(1, math.Abs(float64(want[i])))
				require.InDelta(t, want[i], got[i], tol, "element %d", i)
			}
		})
	}
}

// TestQuantPackingsByHand pins the 3-, 5- and 6-bit byte layouts with packings worked
// out by hand from the spec (codes 0..7 etc. in order, little-endian bit stream).
func TestQuantPackingsByHand(t *testing.T) {
	cases := []struct {
		bits  int
		codes []uint32 // 32 values (one group), stored as codes n - v (see below)
	}{
		{3, seq(32, 8)},
		{5, seq(32, 32)},
		{6, rep(32, 1, 2, 3, 4)},
	}
	for _, c := range cases {
		t.Run(fmt.Sprint(c.bits), func(t *testing.T) {
			// The group spans exactly [0, n] (the last two values are 0 and n), so the
			// quantizer picks edge n, scale -1 and bias n: value v is stored as code n - v.
			n := float32(int(1)<<c.bits - 1)
			codes := append([]uint32(nil), c.codes...)
			codes[30], codes[31] = 0, uint32(n)
			w := make([]float32, 32)
			for i, q := range codes {
				w[i] = float32(q)
			}
			q, scales, biases, err := kernels.Quantize(w, 1, 32, c.bits, 32)
			require.NoError(t, err)
			require.Equal(t, []float32{-1}, scales)
			require.Equal(t, []float32{n}, biases)
			bytes := make([]byte, 4*len(q))
			for i, word := range q {
				binary.LittleEndian.PutUint32(bytes[4*i:], word)
			}
			for i, v := range codes {
				want := uint32(n) - v
				assert.Equal(t, want, streamCode(bytes, i, c.bits), "code %d", i)
			}
			if c.bits == 6 {
				// Codes 62, 61, 60, 59 by the spec's formula: code0 = byte0 & 0x3f; code1 =
				// byte0>>6 | (byte1&0x0f)<<2; code2 = byte1>>4 | (byte2&0x03)<<4; code3 = byte2>>2.
				assert.Equal(t, []byte{62 | (61&3)<<6, 61>>2 | (60&15)<<4, 60>>4 | 59<<2}, bytes[:3])
			}
			if c.bits == 3 {
				// Codes 7-i: 7,6,5,4,3,2,1,0 -> 111 110 101 100 011 010 001 000 from bit 0.
				assert.Equal(t, []byte{0x77, 0x39, 0x05}, bytes[:3])
			}
			if c.bits == 5 {
				// Codes 31, 30, 29, 28, ...: byte0 = 31 | (30&7)<<5 = 0xDF; byte1 =
				// 30>>3 | 29<<2 | (28&1)<<7 = 0x77.
				assert.Equal(t, []byte{0xDF, 0x77}, bytes[:2])
			}
			back, err := kernels.Dequantize(q, scales, biases, 1, 32, c.bits, 32)
			require.NoError(t, err)
			assert.Equal(t, w, back)
		})
	}
}

// streamCode reads code i of a little-endian bit stream, bit by bit (the spec's
// definition, independent of the kernels' word-wise unpacking).
func streamCode(p []byte, i, bits int) uint32 {
	var v uint32
	for k := 0; k < bits; k++ {
		bit := i*bits + k
		v |= uint32(p[bit/8]>>(bit%8)&1) << k
	}
	return v
}

func seq(n, mod int) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = uint32(i % mod)
	}
	return out
}

func rep(n int, v ...uint32) []uint32 {
	out := make([]uint32, n)
	for i := range out {
		out[i] = v[i%len(v)]
	}
	return out
}
