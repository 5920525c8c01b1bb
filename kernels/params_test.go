package kernels

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/kernels/msltest"
)

// paramStructs is every struct the Encode functions send with mslPack, for the layout
// test; TestParamLayouts fails when it and prelude_params.metal (generated from the
// mslPack calls) name different structs.
var paramStructs = []any{
	strided{}, arangeConsts{}, binaryConsts{}, unaryConsts{}, whereConsts{}, copyConsts{}, convConsts{},
	gatedDeltaConsts{}, TakeParams{}, TakeAlongParams{}, GatherMMParams{}, MatmulParams{}, SwitchGLUParams{},
	normConsts{}, rowConsts{}, ropeConsts{}, sdpaConsts{}, TopKParams{}, QuantParams{}, QEmbedParams{},
	QSwitchGLUParams{}, MoEBlockParams{}, MLPBlockParams{}, GDNBlockParams{},
}

// mslStructName is the MSL name of a Go struct as internal/genparams gives it.
func mslStructName(t reflect.Type) string { return strings.ToUpper(t.Name()[:1]) + t.Name()[1:] }

// mslFieldName is the MSL name of a Go field as internal/genparams gives it.
func mslFieldName(f reflect.StructField) string {
	if tag := f.Tag.Get("msl"); tag != "" {
		return tag
	}
	return f.Name
}

// mslType spells a Go field's type as clang spells the MSL one it is sent as (mslPack).
func mslType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int32, reflect.Bool:
		return "int"
	case reflect.Uint32:
		return "uint"
	case reflect.Float32, reflect.Float64:
		return "float"
	case reflect.Array:
		return fmt.Sprintf("%s[%d]", mslType(t.Elem()), t.Len())
	case reflect.Struct:
		return "struct " + mslStructName(t)
	}
	return "unsupported Go type " + t.String()
}

// TestParamLayouts compares every MSL parameter struct of the prelude (its generated
// prelude_params.metal) with the Go struct sent as it (paramStructs): size, and each
// field's name, type and offset as mslPack writes it, against clang's record layouts.
// A struct on either side without the other fails too.
func TestParamLayouts(t *testing.T) {
	msltest.RequireClang(t)
	gen, err := MSL.ReadFile("prelude_params.metal")
	require.NoError(t, err)
	declared := regexp.MustCompile(`(?m)^struct (\w+) \{`).FindAllStringSubmatch(string(gen), -1)
	var names []string
	for _, m := range declared {
		names = append(names, m[1])
	}
	mirrors := map[string]reflect.Type{}
	for _, p := range paramStructs {
		mirrors[mslStructName(reflect.TypeOf(p))] = reflect.TypeOf(p)
	}
	require.ElementsMatch(t, names, keys(mirrors), "MSL structs in prelude_params.metal vs Go structs in paramStructs")
	src, err := Source("prelude") // as the families get it: prelude.metal with its include pasted
	require.NoError(t, err)
	recs, err := msltest.RecordLayouts(src, names)
	require.NoError(t, err)
	for _, n := range names {
		require.NoError(t, compareLayout(recs[n], mirrors[n]))
	}
	t.Logf("%d parameter structs match their Go declarations", len(names))
}

// compareLayout checks Go struct gt, as mslPack writes it, against clang's layout of
// its MSL struct.
func compareLayout(rec msltest.Record, gt reflect.Type) error {
	if rec.Size != 4*len(mslPlan(gt)) || len(rec.Fields) != gt.NumField() {
		return fmt.Errorf("%s: %d bytes in %d fields in MSL, %d bytes in %d fields in Go",
			rec.Name, rec.Size, len(rec.Fields), 4*len(mslPlan(gt)), gt.NumField())
	}
	off := 0
	for i, f := range rec.Fields {
		gf := gt.Field(i)
		if f.Offset != off || f.Type != mslType(gf.Type) || f.Name != mslFieldName(gf) {
			return fmt.Errorf("%s field %d: MSL %s %s at byte %d, Go %s %s at byte %d",
				rec.Name, i, f.Type, f.Name, f.Offset, gf.Type, gf.Name, off)
		}
		off += 4 * len(mslPlan(gf.Type))
	}
	return nil
}

// TestParamLayoutCatchesAMismatch plants a Go struct whose array is one short, one in
// another order, one whose field is named differently and one whose field lacks the
// tag that spells it as MSL does.
func TestParamLayoutCatchesAMismatch(t *testing.T) {
	msltest.RequireClang(t)
	recs, err := msltest.RecordLayouts("struct Planted { int a; float b[3]; int c; };", []string{"Planted"})
	require.NoError(t, err)
	type planted struct {
		A int32      `msl:"a"`
		B [2]float32 `msl:"b"`
		C int32      `msl:"c"`
	}
	require.EqualError(t, compareLayout(recs["Planted"], reflect.TypeOf(planted{})),
		"Planted: 20 bytes in 3 fields in MSL, 16 bytes in 3 fields in Go")
	type reordered struct {
		A int32      `msl:"a"`
		C int32      `msl:"c"`
		B [3]float32 `msl:"b"`
	}
	require.EqualError(t, compareLayout(recs["Planted"], reflect.TypeOf(reordered{})),
		"Planted field 1: MSL float[3] b at byte 4, Go int32 C at byte 4")
	type renamed struct {
		A int        `msl:"a"`
		B [3]float64 `msl:"b"`
		D bool       `msl:"d"`
	}
	require.EqualError(t, compareLayout(recs["Planted"], reflect.TypeOf(renamed{})),
		"Planted field 2: MSL int c at byte 16, Go bool D at byte 16")
	type untagged struct { // the MSL name is the tag's spelling, or the Go name exactly
		A int32      `msl:"a"`
		B [3]float32 `msl:"b"`
		C int32
	}
	require.EqualError(t, compareLayout(recs["Planted"], reflect.TypeOf(untagged{})),
		"Planted field 2: MSL int c at byte 16, Go int32 C at byte 16")
}

// TestMSLPack: the bytes of a parameter struct as its MSL struct holds them (ints and
// bools as int, float64 as float, nested structs and arrays in place), and a value
// over 32 bits fails by the field's name instead of wrapping.
func TestMSLPack(t *testing.T) {
	p := &MoEBlockParams{T: 1, H: 2, E: 3, K: -4, I: 5, Is: 6, Renorm: true, Eps: 0.5}
	require.Equal(t, []byte{1, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0, 0xfc, 0xff, 0xff, 0xff, 5, 0, 0, 0, 6, 0, 0, 0,
		1, 0, 0, 0, 0, 0, 0, 0x3f}, mslPack(p))
	l := Contiguous(Float32, 2, 3)
	b := mslPack(&copyConsts{N: 6, Src: stridedOf(&l), Dst: stridedOf(&l)})
	require.Len(t, b, 4*(1+2*(2+2*MaxDims)))
	require.Equal(t, []byte{6, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 3, 0, 0, 0}, b[:20]) // n, src: ndim, offset, shape
	require.Equal(t, []byte{3, 0, 0, 0, 1, 0, 0, 0}, b[4*(3+MaxDims):4*(5+MaxDims)])             // src strides
	require.PanicsWithValue(t, "kernels: QuantParams.N = 2147483648 does not fit the 32-bit MSL parameter",
		func() { mslPack(&QuantParams{M: 1, N: 1 << 31, K: 64, Bits: 4, Group: 64}) })
	require.PanicsWithValue(t, "kernels: copyConsts.Src.Strides[1] = -2147483649 does not fit the 32-bit MSL parameter",
		func() {
			c := copyConsts{N: 1, Src: stridedOf(&l)}
			c.Src.Strides[1] = math.MinInt32 - 1
			mslPack(&c)
		})
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestOpCodes checks the Go op codes against the MSL enums, by name, both ways.
func TestOpCodes(t *testing.T) {
	for _, c := range []struct {
		family, prefix string
		codes          map[string]int32
		ops            []string
	}{
		{"binary", "BINARY_", binaryCodes, opNames(BinaryOps, func(o *BinaryOp) string { return o.Name })},
		{"unary", "UNARY_", unaryCodes, opNames(UnaryOps, func(o *UnaryOp) string { return o.Name })},
	} {
		src, err := MSL.ReadFile(c.family + ".metal")
		require.NoError(t, err)
		enum := map[string]int32{}
		for _, m := range regexp.MustCompile(c.prefix+`(\w+) = (\d+)`).FindAllStringSubmatch(string(src), -1) {
			var v int32
			fmt.Sscan(m[2], &v)
			enum[strings.ToLower(m[1])] = v
		}
		require.Equal(t, enum, c.codes, "%s: MSL enum vs Go codes", c.family)
		for _, op := range c.ops {
			_, ok := c.codes[op]
			require.True(t, ok, "%s op %s has no MSL code", c.family, op)
		}
		require.Len(t, c.codes, len(c.ops), "%s: codes for ops that do not exist", c.family)
	}
}

func opNames[T any](ops []T, name func(T) string) []string {
	var out []string
	for _, o := range ops {
		out = append(out, name(o))
	}
	return out
}
