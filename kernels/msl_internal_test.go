package kernels

import (
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/require"
)

// TestPasteMSLIncludes: a family's includes are pasted in place, nested ones first and
// each file once, with #line directives naming the file and line that follow; an
// include that is not there is an error naming the file that includes it.
func TestPasteMSLIncludes(t *testing.T) {
	fsys := fstest.MapFS{
		"pre.metal":  {Data: []byte("P1\n")},
		"rows.metal": {Data: []byte("#include \"pre.metal\"\nR2\nR3")}, // no final newline
		"fam.metal":  {Data: []byte("F1\n#include \"rows.metal\"\n#include \"pre.metal\"\n#include <metal_stdlib>\nF5\n")},
		"bad.metal":  {Data: []byte("#include \"gone.metal\"\n")},
	}
	var b strings.Builder
	require.NoError(t, pasteMSL(fsys, &b, "fam.metal", map[string]bool{}))
	require.Equal(t, "F1\n"+
		"#line 1 \"rows.metal\"\n"+
		"#line 1 \"pre.metal\"\nP1\n#line 2 \"rows.metal\"\nR2\nR3\n"+
		"#line 3 \"fam.metal\"\n"+
		"#line 4 \"fam.metal\"\n"+ // pre.metal already pasted
		"#include <metal_stdlib>\nF5\n", b.String())

	b.Reset()
	err := pasteMSL(fsys, &b, "bad.metal", map[string]bool{})
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.ErrorContains(t, err, "kernels: gone.metal included by bad.metal")
}

// TestSourceFamiliesShareQuantRows: the quant and qswitch families each get the prelude
// and the shared rows once, and neither holds the other's entries.
func TestSourceFamiliesShareQuantRows(t *testing.T) {
	for fam, other := range map[string]string{"quant": "kernel void qswitch_", "qswitch": "kernel void qmv_"} {
		src, err := Source(fam)
		require.NoError(t, err)
		require.Equal(t, 1, strings.Count(src, "#line 1 \"prelude.metal\""), fam)
		require.Equal(t, 1, strings.Count(src, "#line 1 \"quant_rows.metal\""), fam)
		require.Equal(t, 1, strings.Count(src, "struct QMat"), fam)
		require.NotContains(t, src, other, fam)
	}
	_, err := Source("nope")
	require.EqualError(t, err, `kernels: no MSL for family "nope": open nope.metal: file does not exist`)
}

// TestMSLDefinesMatchEncode: the MSL constants that Encode's geometry assumes are the
// Go ones (a threadgroup's rows, slots and staging), so changing one side alone fails
// here rather than leaving rows unwritten.
func TestMSLDefinesMatchEncode(t *testing.T) {
	defines := map[string]int{}
	for _, fam := range []string{"quant", "qswitch"} {
		src, err := Source(fam)
		require.NoError(t, err)
		for _, line := range strings.Split(src, "\n") {
			f := strings.Fields(line)
			if len(f) >= 3 && f[0] == "#define" {
				var v int
				if _, err := fmt.Sscanf(f[2], "%d", &v); err == nil {
					defines[f[1]] = v
				}
			}
		}
	}
	for name, want := range map[string]int{
		"QMV_ROWS": qmvRows, "QMV_MAXSG": qmvMaxSimdgroups, "QMV_XMAX": qmvXMax, "QMV_PIPE_K": qmvPipeMaxK,
		"QSW_RS": qswitchSGRows, "QSW_DR": qswitchDownRows,
	} {
		got, ok := defines[name]
		require.True(t, ok, "%s is not #defined in the quant and qswitch sources", name)
		require.Equal(t, want, got, "%s", name)
	}
}
