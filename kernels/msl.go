package kernels

import (
	"embed"
	"fmt"
	"io/fs"
	"strings"
)

// MSL holds the Metal twins: one .metal file per kernel family, compiled by the Metal
// device at first use and run on Linux by the emulation harness in kernels/msltest, and
// the files families include: prelude.metal, which every family includes (and which
// includes the generated prelude_params.metal), and shared helpers (quant_rows.metal,
// included by the quant and qswitch families).
//
//go:embed *.metal
var MSL embed.FS

// Source returns the MSL source of a family as Metal compiles it: Metal compiles a
// library from one string, so each `#include "X.metal"` line is replaced by X's text
// (its own includes first, each file once), with #line directives so that diagnostics
// name each file and line; Apple's offline compiler (xcrun metal) resolves the includes
// itself. Other includes (<metal_stdlib>) are left to the compiler.
func Source(family string) (string, error) {
	var b strings.Builder
	if err := pasteMSL(MSL, &b, family+".metal", map[string]bool{}); err != nil {
		return "", err
	}
	return b.String(), nil
}

// pasteMSL writes file (read from fsys) to b with its includes of .metal files pasted
// in place; seen holds the files already pasted, which are not pasted again.
func pasteMSL(fsys fs.FS, b *strings.Builder, file string, seen map[string]bool) error {
	return pasteMSLFrom(fsys, b, file, "", seen)
}

// pasteMSLFrom is pasteMSL for a file included by includer ("" for the family's own).
func pasteMSLFrom(fsys fs.FS, b *strings.Builder, file, includer string, seen map[string]bool) error {
	data, err := fs.ReadFile(fsys, file)
	if err != nil {
		if includer == "" {
			return fmt.Errorf("kernels: no MSL for family %q: %w", strings.TrimSuffix(file, ".metal"), err)
		}
		return fmt.Errorf("kernels: %s included by %s: %w", file, includer, err)
	}
	seen[file] = true
	lines := strings.SplitAfter(string(data), "\n")
	for i, line := range lines {
		inc, ok := mslInclude(line)
		if !ok {
			b.WriteString(line)
			continue
		}
		if !seen[inc] {
			fmt.Fprintf(b, "#line 1 \"%s\"\n", inc)
			if err := pasteMSLFrom(fsys, b, inc, file, seen); err != nil {
				return err
			}
			if !strings.HasSuffix(b.String(), "\n") {
				b.WriteByte('\n')
			}
		}
		fmt.Fprintf(b, "#line %d \"%s\"\n", i+2, file) // the line after the include
	}
	return nil
}

// mslInclude reports the file a line includes when it is `#include "X.metal"`.
func mslInclude(line string) (string, bool) {
	rest, ok := strings.CutPrefix(strings.TrimSpace(line), "#include \"")
	if !ok {
		return "", false
	}
	name, _, ok := strings.Cut(rest, "\"")
	return name, ok && strings.HasSuffix(name, ".metal")
}
