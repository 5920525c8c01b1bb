package checkpoint

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/ingotml/ingot/kernels"
)

// QuantizedTensor is one affine-quantized weight on the host, as an mlx-community
// checkpoint stores it (spec: quantization.md): Weight holds the packed codes, uint32
// [..., rows, cols*Bits/32]; Scales and Biases the raw little-endian values of
// [..., rows, cols/GroupSize] in ScaleType (F32, F16 or BF16). Shape is the float
// matrix's shape [..., rows, cols] (leading dims stack experts).
type QuantizedTensor struct {
	Shape           []int
	Bits, GroupSize int
	Weight          []uint32
	Scales, Biases  []byte
	ScaleType       DType
}

// Quantize quantizes w (float32, shape [..., rows, cols]) with MLX's reference rule
// (kernels.Quantize, in float32), then casts scales and biases to scaleType with
// round-to-nearest-even: what mx.quantize returns for a weight of that dtype.
func Quantize(w []float32, shape []int, bits, group int, scaleType DType) (*QuantizedTensor, error) {
	if len(shape) < 2 {
		return nil, fmt.Errorf("quantize: shape %v: want [..., rows, cols]", shape)
	}
	cols := shape[len(shape)-1]
	rows := 1
	for _, d := range shape[:len(shape)-1] {
		rows *= d
	}
	if scaleType != F32 && scaleType != F16 && scaleType != BF16 {
		return nil, fmt.Errorf("quantize: scales of dtype %s: want F32, F16 or BF16", scaleType)
	}
	q, s, b, err := kernels.Quantize(w, rows, cols, bits, group)
	if err != nil {
		return nil, fmt.Errorf("quantize: shape %v: %w", shape, err)
	}
	return &QuantizedTensor{
		Shape: append([]int(nil), shape...), Bits: bits, GroupSize: group, Weight: q,
		Scales: encodeFloats(s, scaleType), Biases: encodeFloats(b, scaleType), ScaleType: scaleType,
	}, nil
}

// encodeFloats stores v as little-endian values of dt (F32, F16 or BF16), rounding to
// nearest even.
func encodeFloats(v []float32, dt DType) []byte {
	out := make([]byte, len(v)*dt.Size())
	for i, x := range v {
		switch dt {
		case F32:
			binary.LittleEndian.PutUint32(out[4*i:], math.Float32bits(x))
		case F16:
			binary.LittleEndian.PutUint16(out[2*i:], kernels.F32ToF16(x))
		case BF16:
			binary.LittleEndian.PutUint16(out[2*i:], kernels.F32ToBF16(x))
		}
	}
	return out
}

// decodeFloats widens little-endian values of dt (F32, F16 or BF16) to float32 (exact).
func decodeFloats(b []byte, dt DType) []float32 {
	n := len(b) / dt.Size()
	out := make([]float32, n)
	for i := range out {
		switch dt {
		case F32:
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
		case F16:
			out[i] = kernels.F16ToF32(binary.LittleEndian.Uint16(b[2*i:]))
		case BF16:
			out[i] = kernels.BF16ToF32(binary.LittleEndian.Uint16(b[2*i:]))
		}
	}
	return out
}

// Dequantize expands the tensor to float32 values of Shape: w = scale*q + bias, with
// the scales and biases as stored (widened exactly from ScaleType).
func (t *QuantizedTensor) Dequantize() ([]float32, error) {
	cols := t.Shape[len(t.Shape)-1]
	rows := 1
	for _, d := range t.Shape[:len(t.Shape)-1] {
		rows *= d
	}
	return kernels.Dequantize(t.Weight, decodeFloats(t.Scales, t.ScaleType), decodeFloats(t.Biases, t.ScaleType), rows, cols, t.Bits, t.GroupSize)
}

// WeightBytes returns the packed weight as little-endian bytes, as a file stores it.
func (t *QuantizedTensor) WeightBytes() []byte { return wordBytes(t.Weight) }

// wordBytes returns the little-endian bytes of words.
func wordBytes(words []uint32) []byte {
	b := make([]byte, 4*len(words))
	for i, w := range words {
		binary.LittleEndian.PutUint32(b[4*i:], w)
	}
	return b
}

// CheckFinite returns an error naming the file, the tensor and the first element that
// is NaN or infinite in the named float tensor (F64, F32, F16 or BF16; other dtypes
// pass). Quantization has no code for such a weight (kernels.ErrNonFinite, which the
// error wraps), so a quantizer calls this on its input before writing anything.
func (c *Checkpoint) CheckFinite(name string) error {
	b, info, err := c.Bytes(name)
	if err != nil {
		return err
	}
	switch info.DType {
	case F64, F32, F16, BF16:
	default:
		return nil
	}
	size := info.DType.Size()
	bad := -1
	var value float64
	err = CatchTensorFault(name, func() error { // b is the mapping (see CatchFault)
		for i := 0; i+size <= len(b); i += size {
			var v float64
			switch info.DType {
			case F64:
				v = math.Float64frombits(binary.LittleEndian.Uint64(b[i:]))
			case F32:
				v = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[i:])))
			case F16:
				v = float64(kernels.F16ToF32(binary.LittleEndian.Uint16(b[i:])))
			case BF16:
				v = float64(kernels.BF16ToF32(binary.LittleEndian.Uint16(b[i:])))
			}
			if math.IsNaN(v) || math.IsInf(v, 0) {
				bad, value = i/size, v
				return nil
			}
		}
		return nil
	})
	if err != nil || bad < 0 {
		return err
	}
	_, file, _ := c.Info(name)
	return &CheckpointError{Path: file, Tensor: name, Reason: fmt.Sprintf("element %v of %v holds %v", unravel(bad, info.Shape), info.Shape, value), Err: kernels.ErrNonFinite}
}

// unravel turns a flat row-major index into one index per dimension of shape.
func unravel(flat int, shape []int) []int {
	idx := make([]int, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		if shape[d] > 0 {
			idx[d], flat = flat%shape[d], flat/shape[d]
		}
	}
	return idx
}
