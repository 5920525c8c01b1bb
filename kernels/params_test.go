package kernels

import (
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/kernels/msltest"
)

// mslType spells a Go mirror field's type as clang spells the MSL one.
func mslType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int32:
		return "int"
	case reflect.Uint32:
		return "uint"
	case reflect.Float32:
		return "float"
	case reflect.Array:
		return fmt.Sprintf("%s[%d]", mslType(t.Elem()), t.Len())
	case reflect.Struct:
		if p, ok := reflect.Zero(t).Interface().(mslParams); ok {
			return "struct " + p.mslName()
		}
	}
	return "unsupported Go type " + t.String()
}

// normalize compares names across the two spellings: x_stride and XStride.
func normalize(s string) string { return strings.ToLower(strings.ReplaceAll(s, "_", "")) }

// TestParamLayouts compares every MSL parameter struct of the prelude with its Go mirror:
// size, and each field's offset, type and name, from clang's record layouts. A struct
// without a mirror, or a mirror without a struct, fails too.
func TestParamLayouts(t *testing.T) {
	msltest.RequireClang(t)
	src, err := MSL.ReadFile("prelude.metal")
	require.NoError(t, err)
	declared := regexp.MustCompile(`(?m)^struct (\w+) \{`).FindAllStringSubmatch(string(src), -1)
	var names []string
	for _, m := range declared {
		names = append(names, m[1])
	}
	mirrors := map[string]mslParams{}
	for _, p := range mslParamStructs {
		mirrors[p.mslName()] = p
	}
	require.ElementsMatch(t, names, keys(mirrors), "MSL structs in prelude.metal vs Go mirrors in params.go")
	recs, err := msltest.RecordLayouts(string(src), names)
	require.NoError(t, err)
	for _, n := range names {
		require.NoError(t, compareLayout(recs[n], reflect.TypeOf(mirrors[n])))
	}
	t.Logf("%d parameter structs match their Go mirrors", len(names))
}

// compareLayout checks a Go mirror against clang's layout of its MSL struct.
func compareLayout(rec msltest.Record, gt reflect.Type) error {
	if rec.Size != int(gt.Size()) || len(rec.Fields) != gt.NumField() {
		return fmt.Errorf("%s: %d bytes in %d fields in MSL, %d bytes in %d fields in Go",
			rec.Name, rec.Size, len(rec.Fields), gt.Size(), gt.NumField())
	}
	for i, f := range rec.Fields {
		gf := gt.Field(i)
		if f.Offset != int(gf.Offset) || f.Type != mslType(gf.Type) || normalize(f.Name) != normalize(gf.Name) {
			return fmt.Errorf("%s field %d: MSL %s %s at byte %d, Go %s %s at byte %d",
				rec.Name, i, f.Type, f.Name, f.Offset, gf.Type, gf.Name, gf.Offset)
		}
	}
	return nil
}

// TestParamLayoutCatchesAMismatch plants a mirror whose array is one short.
func TestParamLayoutCatchesAMismatch(t *testing.T) {
	msltest.RequireClang(t)
	recs, err := msltest.RecordLayouts("struct Planted { int a; float b[3]; int c; };", []string{"Planted"})
	require.NoError(t, err)
	type planted struct {
		A int32
		B [2]float32
		C int32
	}
	require.EqualError(t, compareLayout(recs["Planted"], reflect.TypeOf(planted{})),
		"Planted: 20 bytes in 3 fields in MSL, 16 bytes in 3 fields in Go")
	type reordered struct {
		A int32
		C int32
		B [3]float32
	}
	require.EqualError(t, compareLayout(recs["Planted"], reflect.TypeOf(reordered{})),
		"Planted field 1: MSL float[3] b at byte 4, Go int32 C at byte 4")
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
