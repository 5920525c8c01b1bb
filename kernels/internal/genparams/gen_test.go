package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGeneratedFileIsFresh fails when kernels/prelude_params.metal is not what the Go
// parameter structs generate: a struct changed without `go generate ./kernels`.
func TestGeneratedFileIsFresh(t *testing.T) {
	require.NoError(t, run("../..", true), "kernels/%s", OutFile)
}

// plant writes a package of the given files (Go and .metal) into a fresh directory.
func plant(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, src := range files {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644))
	}
	return dir
}

// packGo is a planted package's packer and the structs it sends.
const packGo = `package p

func mslPack[T any](p *T) []byte { return nil }

type ids [2]int32

// inner is sent only inside Outer.
type inner struct {
	Ids   ids    ` + "`msl:\"ids\"`" + `
	Flags uint32 ` + "`msl:\"flags\"`" + `
}

type Outer struct {
	N       int
	In      inner   ` + "`msl:\"in\"`" + ` // nested
	HasBias bool    ` + "`msl:\"has_bias\"`" + `
	Eps     float64 ` + "`msl:\"eps\"`" + `
}

type dims struct{ B, T int }

func use() {
	mslPack(&Outer{})
	mslPack(&dims{})
	mslPack(&dims{})
}
`

// TestGenerate: the structs an mslPack call sends and the structs they hold, named as
// the Go type with its first letter upper-cased, fields as tagged, nested structs first,
// each once.
func TestGenerate(t *testing.T) {
	src, err := generate(plant(t, map[string]string{"p.go": packGo}))
	require.NoError(t, err)
	require.Equal(t, header+`
// dims (p.go)
struct Dims {
    int B;
    int T;
};

// inner (p.go)
struct Inner {
    int ids[2];
    uint flags;
};

// Outer (p.go)
struct Outer {
    int N;
    Inner in; // nested
    int has_bias;
    float eps;
};
`, string(src))
}

// TestCheck: -check passes on the generated file and fails on a stale one.
func TestCheck(t *testing.T) {
	dir := plant(t, map[string]string{"p.go": packGo})
	require.NoError(t, run(dir, false))
	require.NoError(t, run(dir, true))
	require.NoError(t, os.WriteFile(filepath.Join(dir, OutFile), []byte("struct Outer { int N; };\n"), 0o644))
	require.ErrorIs(t, run(dir, true), ErrStale)
	require.EqualError(t, run(dir, true), "prelude_params.metal is stale: run `go generate ./kernels`")
}

// TestRefusals: two structs of one name, a tag that renames a field, and a field MSL
// cannot take fail with the declaration to mend.
func TestRefusals(t *testing.T) {
	const pack = "package p\n\nfunc mslPack[T any](p *T) []byte { return nil }\n"
	for _, c := range []struct {
		name, src, metal, want string
	}{
		{"a Go type has the MSL name", pack + `
// NormParams is what the caller sets; normParams what the kernel reads.
type NormParams struct{ Eps float64 }
type normParams struct{ Rows int; Eps float64 }
func use() { mslPack(&normParams{}) }
`, "", "MSL struct NormParams (from normParams, p.go) is also the Go name NormParams (p.go:6): rename one of them"},
		{"two Go types map to one MSL name", pack + `
type Rows struct{ N int }
type rows struct{ M int }
func use() { mslPack(&Rows{}); mslPack(&rows{}) }
`, "", "MSL struct Rows would be both Rows (p.go) and rows (p.go)"},
		{"a .metal file declares a generated struct", pack + `
type rows struct{ N int }
func use() { mslPack(&rows{}) }
`, "struct Other { int a; };\n\nstruct Rows {\n    int N;\n};\n",
			"hand.metal declares struct Rows, which is generated from rows (p.go): remove it there"},
		{"a tag that renames", pack + "type mm struct{ XStride int `msl:\"y_stride\"` }\nfunc use() { mslPack(&mm{}) }\n", "",
			`mm.XStride: tag msl:"y_stride" is not a spelling of XStride (only case and underscores may differ)`},
		{"a 64-bit field", pack + "type off struct{ At int64 }\nfunc use() { mslPack(&off{}) }\n", "",
			"off.At: int64 cannot be an MSL parameter (int, int32, uint32, bool, float32, float64, arrays and structs of them)"},
		{"a slice", pack + "type v struct{ Xs []float32 }\nfunc use() { mslPack(&v{}) }\n", "",
			"v.Xs: []float32 cannot be an MSL parameter (int, int32, uint32, bool, float32, float64, arrays and structs of them)"},
		{"not a struct", pack + "func use() { n := 3; mslPack(&n) }\n", "",
			"p.go:4: mslPack sends int, which is not a named struct of the package"},
		{"no packer calls", pack, "", "p: no call of mslPack"},
	} {
		t.Run(c.name, func(t *testing.T) {
			files := map[string]string{"p.go": c.src}
			if c.metal != "" {
				files["hand.metal"] = c.metal
			}
			_, err := generate(plant(t, files))
			require.EqualError(t, err, c.want)
		})
	}
}
