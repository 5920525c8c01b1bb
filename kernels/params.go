package kernels

import (
	"fmt"
	"math"
	"unsafe"
)

// The Go mirrors of the MSL parameter structs in prelude.metal, which the Metal twins
// receive with setBytes. Each is defined once here and once there; TestParamLayouts
// compares the two mechanically (size and every field offset, from clang's record
// layout of prelude.metal), and fails on a struct that has no mirror.
//
// Every field is 4 bytes (int32, float32 or arrays of them), so Go and MSL lay the
// fields out the same way with no padding, and a mirror's memory is already the
// setBytes payload (all supported hosts are little endian): mslBytes packs without
// reflection or copying.

// mslParams is a Go mirror of an MSL parameter struct.
type mslParams interface {
	// mslName is the MSL struct's name in prelude.metal.
	mslName() string
}

// mslBytes returns the setBytes payload of p: its own memory, which the encoder
// copies before the call returns.
func mslBytes[T mslParams](p *T) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(p)), unsafe.Sizeof(*p))
}

// mslInt converts a size, stride or count for an MSL parameter block, whose fields are
// 32 bits: a value outside int32 panics with the field's name, which GPU.Run reports as
// the launch's error, instead of wrapping silently. (Element offsets travel as 64-bit
// buffer offsets, and the kernels index in 64 bits.)
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

// mslStrided is Strided: one strided argument (its element offset travels as the
// buffer binding offset, and is here for the record).
type mslStrided struct {
	NDim    int32
	Offset  int32
	Shape   [MaxDims]int32
	Strides [MaxDims]int32
}

func (mslStrided) mslName() string { return "Strided" }

// stridedOf converts a layout for an MSL parameter block.
func stridedOf(l *Layout) mslStrided {
	m := mslStrided{NDim: int32(l.NDim), Offset: int32(l.Offset)}
	for i := 0; i < l.NDim; i++ {
		m.Shape[i] = int32(l.Shape[i])
		m.Strides[i] = int32(l.Strides[i])
	}
	return m
}

type mslArange struct {
	N           int32
	Start, Step float32
}

func (mslArange) mslName() string { return "ArangeParams" }

type mslBinary struct {
	Op, N int32
	A, B  mslStrided
}

func (mslBinary) mslName() string { return "BinaryParams" }

type mslUnary struct {
	Op, N int32
	A     mslStrided
}

func (mslUnary) mslName() string { return "UnaryParams" }

type mslWhere struct {
	N       int32
	C, A, B mslStrided
}

func (mslWhere) mslName() string { return "WhereParams" }

type mslCopy struct {
	N        int32
	Src, Dst mslStrided
}

func (mslCopy) mslName() string { return "CopyParams" }

type mslConv struct{ B, T, C, K, Tout int32 }

func (mslConv) mslName() string { return "ConvParams" }

type mslGatedDelta struct{ B, T, Hk, Hv, Dk, Dv, Masked int32 }

func (mslGatedDelta) mslName() string { return "GatedDeltaParams" }

type mslTake struct{ Outer, Axis, Inner, NIdx int32 }

func (mslTake) mslName() string { return "TakeParams" }

type mslTakeAlong struct{ Outer, Axis, M, Inner int32 }

func (mslTakeAlong) mslName() string { return "TakeAlongParams" }

type mslGatherMM struct{ Rows, TopK, Experts, O, K int32 }

func (mslGatherMM) mslName() string { return "GatherMMParams" }

type mslMatmul struct{ Batch, M, N, K, XStride, WStride int32 }

func (mslMatmul) mslName() string { return "MatmulParams" }

type mslSwitchGLU struct{ T, H, K, E, I int32 }

func (mslSwitchGLU) mslName() string { return "SwitchGLUParams" }

type mslNorm struct {
	Rows, Cols int32
	Eps        float32
	HasWeight  int32
}

func (mslNorm) mslName() string { return "NormParams" }

// mslRow is the parameter block of the row-wise families (reduce, softmax).
type mslRow struct{ Rows, Cols int32 }

func (mslRow) mslName() string { return "RowParams" }

type mslRoPE struct{ B, H, S, D, Dims int32 }

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

type mslQuant struct{ M, N, K, Bits, Group int32 }

func (mslQuant) mslName() string { return "QuantParams" }

type mslQEmbed struct{ T, V, D, Bits, Group int32 }

func (mslQEmbed) mslName() string { return "QEmbedParams" }

type mslQSwitchGLU struct {
	T, H, K, E, I                 int32
	GateBits, UpBits, DownBits    int32
	GateGroup, UpGroup, DownGroup int32
}

func (mslQSwitchGLU) mslName() string { return "QSwitchGLUParams" }

type mslTopK struct{ Rows, N, K int32 }

func (mslTopK) mslName() string { return "TopKParams" }

type mslMoEBlock struct {
	T, H, E, K, I, Is, Renorm int32
	Eps                       float32
}

func (mslMoEBlock) mslName() string { return "MoEBlockParams" }

type mslGDNBlock struct {
	B, H, Hk, Hv, Dk, Dv, K, Grouped, Masked int32
	Eps, QKEps, QScale, KScale               float32
}

func (mslGDNBlock) mslName() string { return "GDNBlockParams" }

// mslParamStructs lists every mirror, for the layout test.
var mslParamStructs = []mslParams{
	mslStrided{}, mslArange{}, mslBinary{}, mslUnary{}, mslWhere{}, mslCopy{}, mslConv{},
	mslGatedDelta{}, mslTake{}, mslTakeAlong{}, mslGatherMM{}, mslMatmul{}, mslSwitchGLU{},
	mslNorm{}, mslRow{}, mslRoPE{}, mslSDPA{}, mslTopK{}, mslQuant{}, mslQEmbed{}, mslQSwitchGLU{},
	mslMoEBlock{}, mslGDNBlock{},
}
