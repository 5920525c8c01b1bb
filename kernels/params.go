package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"reflect"
	"sync"
	"unsafe"
)

// The setBytes structs of the Metal twins. Each is declared once in Go: a kernel's
// parameter struct itself (QuantParams, MoEBlockParams, ...: the struct both twins
// read), or, where the MSL block is computed from the launch's layouts (strided
// arguments, row counts), a wire struct here (mslStrided, ...). mslPack writes any of
// them as its MSL struct's bytes, field by field in declaration order; TestParamLayouts
// compares every one with its struct in prelude.metal field by field (name, order,
// type and byte offset, from clang's record layout), and fails on a struct on either
// side without the other.
//
// Field types: int (sent as MSL int, with a range check), bool (int 0 or 1), float64
// (float), int32, uint32, float32, arrays of these and nested wire structs. Every MSL
// field is 4 bytes, so the structs have no padding.

// mslParams is a Go struct sent with setBytes.
type mslParams interface {
	// mslName is the MSL struct's name in prelude.metal.
	mslName() string
}

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

// mslPack returns the setBytes payload of p, an mslParams struct. An int
// outside int32 panics with the field's name, which GPU.Run reports as the launch's
// error, instead of wrapping silently. (Element offsets travel as 64-bit buffer
// offsets, and the kernels index in 64 bits.)
func mslPack[T mslParams](p *T) []byte {
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

// The wire structs: MSL blocks computed from a launch's layouts.

// mslStrided is Strided: one strided argument. Its element offset travels as the
// buffer binding offset (64 bits); the kernels never read this field, which keeps its
// low 32 bits for the record.
type mslStrided struct {
	NDim    int
	Offset  int32
	Shape   [MaxDims]int
	Strides [MaxDims]int
}

func (mslStrided) mslName() string { return "Strided" }

// stridedOf is a layout as an MSL parameter block.
func stridedOf(l *Layout) mslStrided {
	m := mslStrided{NDim: l.NDim, Offset: int32(l.Offset)}
	copy(m.Shape[:l.NDim], l.Shape[:l.NDim])
	copy(m.Strides[:l.NDim], l.Strides[:l.NDim])
	return m
}

type mslArange struct {
	N           int
	Start, Step float32
}

func (mslArange) mslName() string { return "ArangeParams" }

type mslBinary struct {
	Op   int32
	N    int
	A, B mslStrided
}

func (mslBinary) mslName() string { return "BinaryParams" }

type mslUnary struct {
	Op int32
	N  int
	A  mslStrided
}

func (mslUnary) mslName() string { return "UnaryParams" }

type mslWhere struct {
	N       int
	C, A, B mslStrided
}

func (mslWhere) mslName() string { return "WhereParams" }

type mslCopy struct {
	N        int
	Src, Dst mslStrided
}

func (mslCopy) mslName() string { return "CopyParams" }

type mslConv struct{ B, T, C, K, Tout int }

func (mslConv) mslName() string { return "ConvParams" }

// gdDims, gated_delta's sizes from its layouts, is its own wire struct.
func (gdDims) mslName() string { return "GatedDeltaParams" }

type mslNorm struct {
	Rows, Cols int
	Eps        float64
	HasWeight  bool
}

func (mslNorm) mslName() string { return "NormParams" }

// mslRow is the parameter block of the row-wise families (reduce, softmax).
type mslRow struct{ Rows, Cols int }

func (mslRow) mslName() string { return "RowParams" }

type mslRoPE struct{ B, H, S, D, Dims int }

func (mslRoPE) mslName() string { return "RoPEParams" }

type mslSDPA struct {
	B, Hq, Hkv, Sq, Skv, D, Dv int32
	KStrides, VStrides         [3]int32 // batch, head, position
	MStrides                   [4]int32 // batch, head, query, key
	HasMask                    int32
	Scale                      float32
	Splits, Chunk              int32 // the split of the keys (sdpaSplit)
}

func (mslSDPA) mslName() string { return "SDPAParams" }

// The kernels' parameter structs that are their own setBytes structs: the MSL struct
// has the Go type's name.
func (QuantParams) mslName() string      { return "QuantParams" }
func (QEmbedParams) mslName() string     { return "QEmbedParams" }
func (QSwitchGLUParams) mslName() string { return "QSwitchGLUParams" }
func (MatmulParams) mslName() string     { return "MatmulParams" }
func (SwitchGLUParams) mslName() string  { return "SwitchGLUParams" }
func (TopKParams) mslName() string       { return "TopKParams" }
func (TakeParams) mslName() string       { return "TakeParams" }
func (TakeAlongParams) mslName() string  { return "TakeAlongParams" }
func (GatherMMParams) mslName() string   { return "GatherMMParams" }
func (MoEBlockParams) mslName() string   { return "MoEBlockParams" }
func (MLPBlockParams) mslName() string   { return "MLPBlockParams" }
func (GDNBlockParams) mslName() string   { return "GDNBlockParams" }

// mslParamStructs lists every struct sent with setBytes, for the layout test.
var mslParamStructs = []mslParams{
	mslStrided{}, mslArange{}, mslBinary{}, mslUnary{}, mslWhere{}, mslCopy{}, mslConv{},
	gdDims{}, TakeParams{}, TakeAlongParams{}, GatherMMParams{}, MatmulParams{}, SwitchGLUParams{},
	mslNorm{}, mslRow{}, mslRoPE{}, mslSDPA{}, TopKParams{}, QuantParams{}, QEmbedParams{}, QSwitchGLUParams{},
	MoEBlockParams{}, MLPBlockParams{}, GDNBlockParams{},
}
