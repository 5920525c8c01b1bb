package msltest

import (
	"errors"
	"os"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestLintCatchesPlantedMistakes: every planted mistake is reported at its line.
func TestLintCatchesPlantedMistakes(t *testing.T) {
	RequireClang(t)
	src, err := os.ReadFile("testdata/lint_bad.metal")
	require.NoError(t, err)
	err = Lint("lint_bad.metal", string(src))
	var le *LintError
	require.True(t, errors.As(err, &le), "got %v", err)
	for _, want := range []string{
		"lint_bad.metal:11: kernel bad: [[buffer(0)]] parameter a has no address space (device or constant)",
		"lint_bad.metal:18: floating literal 1.5 has no suffix: a double in C++ (write 1.5f)",
		"lint_bad.metal:17:19: error: cannot initialize a variable of type 'device float *' with an lvalue of type 'threadgroup float[32]'",
		"lint_bad.metal:18:27: error: no matching function for call to 'plain_sum'",
		"lint_bad.metal:19:5: error: attempt to use a poisoned identifier",
	} {
		require.Contains(t, le.Output, want)
	}
}

// TestLintAcceptsCleanSource: a correct kernel passes.
func TestLintAcceptsCleanSource(t *testing.T) {
	RequireClang(t)
	const src = `#include <metal_stdlib>
using namespace metal;
float total(const device float* v, int n) {
    float s = 0.0f;
    for (int i = 0; i < n; i++) s += v[i];
    return s;
}
kernel void ok(const device float* a [[buffer(0)]], device float* out [[buffer(1)]],
               constant int& n [[buffer(2)]], uint i [[thread_position_in_grid]],
               uint l [[thread_index_in_threadgroup]]) {
    threadgroup float shared[32];
    threadgroup float* s = shared;
    s[l % 32] = a[i] * 1.5f;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    out[i] = s[(l + 1) % 32] + total(a, n);
}
`
	require.NoError(t, Lint("ok.metal", src))
}
