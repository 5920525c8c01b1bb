package kernels

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unsafe"
)

// MLX's affine quantization format (spec: quantization.md). A matrix W [rows, cols] is
// cut into groups of G consecutive values along each row; a group is stored as b-bit
// codes q with one scale and one bias, w = scale*q + bias. The codes of a row form a
// little-endian bit stream (code i at bits [i*b, i*b+b)) stored as uint32 words, so 8
// consecutive codes always fill exactly b bytes: every width unpacks by one rule.

// QuantBits reports whether b is a supported code width (2, 3, 4, 5, 6 or 8 bits).
func QuantBits(b int) bool {
	switch b {
	case 2, 3, 4, 5, 6, 8:
		return true
	}
	return false
}

// QuantGroup reports whether g is a supported group size (32, 64 or 128).
func QuantGroup(g int) bool { return g == 32 || g == 64 || g == 128 }

// ErrNonFinite is wrapped by Quantize's error for a NaN or infinite weight. MLX's rule
// has no code for one: mx.quantize gives a group holding +Inf a NaN scale and an
// infinite bias (every weight of the group then reads back as NaN) and a NaN weight an
// undefined code, silently. Here the weight is refused instead.
var ErrNonFinite = errors.New("non-finite weight")

// QuantFormatError reports a quantized matrix whose shapes do not fit its bits and group.
type QuantFormatError struct{ Reason string }

// Error returns the reason.
func (e *QuantFormatError) Error() string { return "quantized matrix: " + e.Reason }

// CheckQuant validates bits and group size for rows of cols values and returns the
// number of uint32 words per packed row and of groups per row.
func CheckQuant(cols, bits, group int) (words, groups int, err error) {
	switch {
	case !QuantBits(bits):
		return 0, 0, &QuantFormatError{fmt.Sprintf("%d bits is not one of 2, 3, 4, 5, 6, 8", bits)}
	case !QuantGroup(group):
		return 0, 0, &QuantFormatError{fmt.Sprintf("group size %d is not one of 32, 64, 128", group)}
	case cols <= 0 || cols%group != 0:
		return 0, 0, &QuantFormatError{fmt.Sprintf("%d columns is not a positive multiple of the group size %d", cols, group)}
	}
	return cols * bits / 32, cols / group, nil
}

// QuantCols returns the unpacked width of a packed row of words uint32 words at bits
// per code, and whether it is a whole number of groups.
func QuantCols(words, bits, group int) (int, bool) {
	if words <= 0 || !QuantBits(bits) || !QuantGroup(group) || (words*32)%bits != 0 {
		return 0, false
	}
	cols := words * 32 / bits
	return cols, cols%group == 0
}

// quantUnpack8 decodes 8 consecutive codes from the b bytes at p into dst[:8].
func quantUnpack8(dst []float32, p []byte, bits int) {
	var v uint64
	for i := bits - 1; i >= 0; i-- {
		v = v<<8 | uint64(p[i])
	}
	mask := uint64(1)<<bits - 1
	dst = dst[:8]
	for j := range dst {
		dst[j] = float32((v >> (j * bits)) & mask)
	}
}

// quantUnpack decodes the len(dst) codes (a multiple of 8) of the byte stream p.
func quantUnpack(dst []float32, p []byte, bits int) {
	switch bits {
	case 4: // the common case: a word is 8 codes
		for i := 0; i < len(dst); i += 8 {
			w := binary.LittleEndian.Uint32(p[i/2:])
			d := dst[i : i+8 : i+8]
			d[0], d[1], d[2], d[3] = float32(w&15), float32(w>>4&15), float32(w>>8&15), float32(w>>12&15)
			d[4], d[5], d[6], d[7] = float32(w>>16&15), float32(w>>20&15), float32(w>>24&15), float32(w>>28)
		}
	case 8:
		for i := range dst {
			dst[i] = float32(p[i])
		}
	default:
		for i := 0; i < len(dst); i += 8 {
			quantUnpack8(dst[i:], p[i/8*bits:], bits)
		}
	}
}

// roundEven is round-half-to-even of a float32, as MLX rounds.
func roundEven(x float32) float32 { return float32(math.RoundToEven(float64(x))) }

// Quantize quantizes w [rows, cols] with MLX's reference rule, computed in float32:
// per group, scale = max((max-min)/n, 1e-7) with n = 2^bits-1, signed so the edge of
// larger magnitude is hit exactly (scale = edge/round(edge/scale), bias = edge, unless
// that rounds to 0: then bias = 0), and q = clip(round((w-bias)/scale), 0, n). It
// returns the packed rows (uint32 [rows, cols*bits/32]) and the float32 scales and
// biases [rows, cols/group]; casting those to a half type is the caller's last step.
func Quantize(w []float32, rows, cols, bits, group int) (q []uint32, scales, biases []float32, err error) {
	words, groups, err := CheckQuant(cols, bits, group)
	if err != nil {
		return nil, nil, nil, err
	}
	if len(w) != rows*cols {
		return nil, nil, nil, &QuantFormatError{fmt.Sprintf("%d values for a [%d, %d] matrix", len(w), rows, cols)}
	}
	q = make([]uint32, rows*words)
	scales = make([]float32, rows*groups)
	biases = make([]float32, rows*groups)
	n := float32(int(1)<<bits - 1)
	for r := 0; r < rows; r++ {
		for g := 0; g < groups; g++ {
			vals := w[r*cols+g*group : r*cols+(g+1)*group]
			lo, hi := vals[0], vals[0]
			for i, v := range vals {
				if v-v != 0 { // NaN or ±Inf: its code would overflow the bits (and putBits the row)
					return nil, nil, nil, fmt.Errorf("row %d, column %d holds %v: %w", r, g*group+i, v, ErrNonFinite)
				}
				lo, hi = min(lo, v), max(hi, v)
			}
			scale := max((hi-lo)/n, 1e-7)
			edge := hi
			if abs32(lo) > abs32(hi) {
				edge = lo
			} else {
				scale = -scale
			}
			bias := float32(0)
			if q0 := roundEven(edge / scale); q0 != 0 {
				scale, bias = edge/q0, edge
			}
			scales[r*groups+g], biases[r*groups+g] = scale, bias
			for i, v := range vals {
				c := min(max(roundEven((v-bias)/scale), 0), n)
				bit := (g*group + i) * bits
				putBits(q[r*words:(r+1)*words], bit, uint64(c), bits)
			}
		}
	}
	return q, scales, biases, nil
}

// putBits stores the bits-wide value v at bit offset bit of the little-endian word stream.
func putBits(words []uint32, bit int, v uint64, bits int) {
	v <<= bit % 32
	for i := bit / 32; v != 0; i++ {
		words[i] |= uint32(v)
		v >>= 32
	}
}

func abs32(x float32) float32 { return math.Float32frombits(math.Float32bits(x) &^ (1 << 31)) }

// Dequantize expands packed rows (uint32 [rows, cols*bits/32]) with scales and biases
// [rows, cols/group] to float32 [rows, cols]: w = scale*q + bias.
func Dequantize(q []uint32, scales, biases []float32, rows, cols, bits, group int) ([]float32, error) {
	words, groups, err := CheckQuant(cols, bits, group)
	if err != nil {
		return nil, err
	}
	if len(q) != rows*words || len(scales) != rows*groups || len(biases) != rows*groups {
		return nil, &QuantFormatError{fmt.Sprintf("%d words, %d scales, %d biases for a [%d, %d] matrix at %d bits, group %d",
			len(q), len(scales), len(biases), rows, cols, bits, group)}
	}
	out := make([]float32, rows*cols)
	raw := unsafeBytes32(q)
	for r := 0; r < rows; r++ {
		row := out[r*cols : (r+1)*cols]
		quantUnpack(row, raw[r*words*4:(r+1)*words*4], bits)
		for i := range row {
			g := r*groups + i/group
			row[i] = scales[g]*row[i] + biases[g]
		}
	}
	return out, nil
}

// unsafeBytes32 views uint32 words as their little-endian bytes (the hosts ingot runs on
// are little-endian, as the F32 views assume).
func unsafeBytes32(w []uint32) []byte {
	if len(w) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), len(w)*4)
}
