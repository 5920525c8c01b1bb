package kernels

import (
	"embed"
	"fmt"
	"strings"
)

// MSL holds the Metal twins: one .metal file per kernel family, compiled by the Metal
// device at first use and run on Linux by the emulation harness in kernels/msltest, and
// prelude.metal, which every family includes.
//
//go:embed *.metal
var MSL embed.FS

// preludeInclude is the line by which a family's file includes the prelude. Metal
// compiles a library from one string, so Source pastes the prelude in its place;
// Apple's offline compiler (xcrun metal) resolves the include itself.
const preludeInclude = `#include "prelude.metal"`

// Source returns the MSL source of a family as Metal compiles it: the prelude, then the
// family's file, with #line directives so that diagnostics name each file and line.
func Source(family string) (string, error) {
	b, err := MSL.ReadFile(family + ".metal")
	if err != nil {
		return "", fmt.Errorf("kernels: no MSL for family %q: %w", family, err)
	}
	src := string(b)
	before, after, ok := strings.Cut(src, preludeInclude+"\n")
	if !ok {
		return "", fmt.Errorf("kernels: %s.metal does not include the prelude (%s)", family, preludeInclude)
	}
	pre, err := MSL.ReadFile("prelude.metal")
	if err != nil {
		return "", fmt.Errorf("kernels: %w", err)
	}
	line := strings.Count(before, "\n") + 2 // the line after the include
	return fmt.Sprintf("%s#line 1 \"prelude.metal\"\n%s#line %d \"%s.metal\"\n%s",
		before, pre, line, family, after), nil
}

// Groups1D is the usual dispatch of a 1-D elementwise kernel over n threads.
func Groups1D(n int) (grid, group [3]int) {
	g := 256
	if n < g {
		g = max(n, 1)
	}
	return [3]int{max(n, 1), 1, 1}, [3]int{g, 1, 1}
}
