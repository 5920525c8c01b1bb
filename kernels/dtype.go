package kernels

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/x448/float16"
)

// DType is an element type of a buffer.
type DType uint8

// The element types the engine knows.
const (
	Float32 DType = iota
	Float16
	BFloat16
	Int32
	UInt32
	Bool
	numDTypes
)

var dtypeNames = [...]string{"float32", "float16", "bfloat16", "int32", "uint32", "bool"}
var dtypeSizes = [...]int{4, 2, 2, 4, 4, 1}

// String returns the dtype's name, as MLX spells it.
func (d DType) String() string {
	if d < numDTypes {
		return dtypeNames[d]
	}
	return fmt.Sprintf("dtype(%d)", uint8(d))
}

// Size is the element size in bytes.
func (d DType) Size() int { return dtypeSizes[d] }

// IsFloat reports whether d is a floating-point type.
func (d DType) IsFloat() bool { return d == Float32 || d == Float16 || d == BFloat16 }

// Valid reports whether d is a known dtype.
func (d DType) Valid() bool { return d < numDTypes }

// F32 views b as float32 values (b must be 4-byte aligned, as allocator buffers are).
func F32(b []byte) []float32 {
	if len(b) < 4 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), len(b)/4)
}

// I32 views b as int32 values.
func I32(b []byte) []int32 {
	if len(b) < 4 {
		return nil
	}
	return unsafe.Slice((*int32)(unsafe.Pointer(&b[0])), len(b)/4)
}

// U32 views b as uint32 values.
func U32(b []byte) []uint32 {
	if len(b) < 4 {
		return nil
	}
	return unsafe.Slice((*uint32)(unsafe.Pointer(&b[0])), len(b)/4)
}

// U16 views b as uint16 values (the storage of float16 and bfloat16).
func U16(b []byte) []uint16 {
	if len(b) < 2 {
		return nil
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), len(b)/2)
}

// BF16ToF32 widens a bfloat16 bit pattern.
func BF16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

// F32ToBF16 narrows with round-to-nearest-even (NaN stays NaN).
func F32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 0x40
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

// F16ToF32 widens an IEEE half bit pattern.
func F16ToF32(h uint16) float32 { return float16.Frombits(h).Float32() }

// F32ToF16 narrows with round-to-nearest-even.
func F32ToF16(f float32) uint16 { return float16.Fromfloat32(f).Bits() }

// Load reads element i of a buffer of dtype d as float64 (exact for every dtype here).
func Load(d DType, b []byte, i int) float64 {
	switch d {
	case Float32:
		return float64(F32(b)[i])
	case Float16:
		return float64(F16ToF32(U16(b)[i]))
	case BFloat16:
		return float64(BF16ToF32(U16(b)[i]))
	case Int32:
		return float64(I32(b)[i])
	case UInt32:
		return float64(U32(b)[i])
	case Bool:
		if b[i] != 0 {
			return 1
		}
		return 0
	}
	panic("kernels: unknown dtype " + d.String())
}

// toF32Odd narrows v to float32 rounding to odd: an inexact result gets its last bit
// set, so a second rounding to a half type lands where rounding v directly would
// (float64 -> float32 -> half with round-to-nearest twice can be off by one ulp).
func toF32Odd(v float64) float32 {
	f := float32(v)
	if float64(f) == v || math.IsInf(float64(f), 0) || v != v {
		return f
	}
	if math.Abs(float64(f)) > math.Abs(v) { // rounded away from zero: step back toward it
		f = math.Float32frombits(math.Float32bits(f) - 1)
	}
	return math.Float32frombits(math.Float32bits(f) | 1)
}

// Store writes v to element i, converting as a cast would (floats round to nearest even,
// integers truncate toward zero, bool is v != 0).
func Store(d DType, b []byte, i int, v float64) {
	switch d {
	case Float32:
		F32(b)[i] = float32(v)
	case Float16:
		U16(b)[i] = F32ToF16(toF32Odd(v))
	case BFloat16:
		U16(b)[i] = F32ToBF16(toF32Odd(v))
	case Int32:
		I32(b)[i] = int32(v)
	case UInt32:
		U32(b)[i] = uint32(int64(v))
	case Bool:
		if v != 0 {
			b[i] = 1
		} else {
			b[i] = 0
		}
	default:
		panic("kernels: unknown dtype " + d.String())
	}
}
