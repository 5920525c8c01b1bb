package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"sync"
	"unsafe"
)

// The setBytes structs of the Metal twins are declared once, in Go, in their family's
// file: a kernel's parameter struct itself where both twins read it as it is
// (QuantParams, MoEBlockParams, ...), or, where the MSL block is computed from the
// launch's layouts (strides, row counts), an unexported struct beside the family's
// Encode (normConsts, strided, ...). Every struct an Encode sends with mslPack is one:
// `go generate` (internal/genparams) writes its MSL struct into prelude_params.metal,
// named as the Go type with its first letter upper-cased, each field named as in Go or
// as its `msl:"..."` tag spells it. mslPack writes the bytes field by field in
// declaration order; TestParamLayouts holds the two against clang's record layouts and
// genparams' test fails when the generated file is stale.
//
// Field types: int (sent as MSL int, with a range check), bool (int 0 or 1), float64
// (float), int32, uint32 (uint), float32, arrays of these and nested structs. Every MSL
// field is 4 bytes, so the structs have no padding.

//go:generate go run ./internal/genparams

// mslField is one 4-byte field of a packed struct: its byte offset in the Go value,
// its kind, and its name for errors ("QuantParams.N").
type mslField struct {
	off  uintptr
	kind reflect.Kind
	name string
}

// mslPlans caches each type's fields (reflect.Type -> []mslField).
var mslPlans sync.Map

// mslPlan returns t's fields flattened in MSL order (arrays and nested structs
// expanded), panicking on a type mslPack cannot send.
func mslPlan(t reflect.Type) []mslField {
	if v, ok := mslPlans.Load(t); ok {
		return v.([]mslField)
	}
	var out []mslField
	var walk func(t reflect.Type, off uintptr, name string)
	walk = func(t reflect.Type, off uintptr, name string) {
		switch t.Kind() {
		case reflect.Int, reflect.Int32, reflect.Uint32, reflect.Bool, reflect.Float32, reflect.Float64:
			out = append(out, mslField{off, t.Kind(), name})
		case reflect.Array:
			for i := 0; i < t.Len(); i++ {
				walk(t.Elem(), off+uintptr(i)*t.Elem().Size(), fmt.Sprintf("%s[%d]", name, i))
			}
		case reflect.Struct:
			for i := 0; i < t.NumField(); i++ {
				f := t.Field(i)
				walk(f.Type, off+f.Offset, name+"."+f.Name)
			}
		default:
			panic(fmt.Sprintf("kernels: %s: %s cannot be an MSL parameter", name, t))
		}
	}
	walk(t, 0, t.Name())
	mslPlans.Store(t, out)
	return out
}

// mslPack returns the setBytes payload of p, a parameter struct. An int
// outside int32 panics with the field's name, which GPU.Run reports as the launch's
// error, instead of wrapping silently. (Element offsets travel as 64-bit buffer
// offsets, and the kernels index in 64 bits.)
func mslPack[T any](p *T) []byte {
	base := unsafe.Pointer(p) // not an interface: p stays on the caller's stack
	plan := mslPlan(reflect.TypeFor[T]())
	out := make([]byte, 4*len(plan))
	for i, f := range plan {
		at := unsafe.Add(base, f.off)
		var w uint32
		switch f.kind {
		case reflect.Int:
			w = uint32(mslInt(f.name, *(*int)(at)))
		case reflect.Int32, reflect.Uint32, reflect.Float32:
			w = *(*uint32)(at)
		case reflect.Bool:
			if *(*bool)(at) {
				w = 1
			}
		case reflect.Float64:
			w = math.Float32bits(float32(*(*float64)(at)))
		}
		binary.LittleEndian.PutUint32(out[4*i:], w)
	}
	return out
}

// mslInt converts a size, stride or count for an MSL parameter block, whose fields are
// 32 bits: a value outside int32 panics with the field's name (see mslPack).
func mslInt(field string, v int) int32 {
	if v < math.MinInt32 || v > math.MaxInt32 {
		panic(fmt.Sprintf("kernels: %s = %d does not fit the 32-bit MSL parameter", field, v))
	}
	return int32(v)
}

// mslFloats returns the setBytes payload of a float32 array.
func mslFloats(v []float32) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 4*len(v))
}
