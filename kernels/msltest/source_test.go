package msltest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func rewriteString(t *testing.T, src string) string {
	t.Helper()
	toks, err := lex(src)
	require.NoError(t, err)
	out, err := rewrite(src, toks)
	require.NoError(t, err)
	return out
}

func TestRewriteThreadgroup(t *testing.T) {
	src := "threadgroup float a[32], b[N * 2];\n" +
		"threadgroup float* p = a + 1; threadgroup const float& r = b[0];\n" +
		"void f(threadgroup vec<float, 4>* q [[threadgroup(0)]]) { auto s = (threadgroup float*)p; }\n" +
		"threadgroup atomic_uint count;\n" +
		"threadgroup float tile[8][9];\n" +
		"#define TG threadgroup\n"
	want := "static      float a[32], b[N * 2]; msl_detail::tg_register(&a, sizeof(a)); msl_detail::tg_register(&b, sizeof(b));\n" +
		"            float* p = a + 1;             const float& r = b[0];\n" +
		"void f(            vec<float, 4>* q [[threadgroup(0)]]) { auto s = (            float*)p; }\n" +
		"static      atomic_uint count; msl_detail::tg_register(&count, sizeof(count));\n" +
		"static      float tile[8][9]; msl_detail::tg_register(&tile, sizeof(tile));\n" +
		"#define TG            \n"
	require.Equal(t, want, rewriteString(t, src))
}

func TestRewriteFloatLiterals(t *testing.T) {
	src := "x = 1.5 + 2.f + .5 + 1e-3 + 3 + 0x10 + 0x1p-3 + 2.5h + 1.0L + 7u; // 1.5 in a comment\n" +
		"#define EPS 1e-6\n" +
		"s = \"2.5\";"
	want := "x = 1.5f + 2.f + .5f + 1e-3f + 3 + 0x10 + 0x1p-3f + half(2.5f) + 1.0L + 7u; // 1.5 in a comment\n" +
		"#define EPS 1e-6f\n" +
		"s = \"2.5\";"
	require.Equal(t, want, rewriteString(t, src))
}

func TestRewriteRefusesQuotedInclude(t *testing.T) {
	src := "#include <metal_stdlib>\n#include \"common.h\"\n"
	toks, err := lex(src)
	require.NoError(t, err)
	_, err = rewrite(src, toks)
	require.EqualError(t, err, `line 2: #include "common.h": only <metal_*> headers can be included`)
}

func TestFindKernels(t *testing.T) {
	src := `
template <typename T> kernel void tmpl(device T* x [[buffer(0)]]) {}
template <typename T>
[[kernel]] void tmpl2(device T* x [[buffer(0)]]) {}
template [[host_name("tmpl_f")]] [[kernel]] decltype(tmpl2<float>) tmpl2<float>;
/* kernel void commented(...) */
[[kernel]] void attr_form(device float* x [[buffer(1)]], uint2 p [[thread_position_in_grid]]) {}
kernel void plain(
    constant Params& p [[buffer(0)]],
    const device half* in [[buffer(2)]],
    device float* out [[buffer(3)]],
    ushort lane [[thread_index_in_simdgroup]]) {}
`
	toks, err := lex(src)
	require.NoError(t, err)
	ks, err := findKernels(toks)
	require.NoError(t, err)
	require.Len(t, ks, 2)
	require.Equal(t, "attr_form", ks[0].name)
	require.Equal(t, []param{
		{name: "x", kind: paramBuffer, attr: "buffer", index: 1, addressSpace: true},
		{name: "p", kind: paramVector, attr: "thread_position_in_grid"},
	}, ks[0].params)
	require.Equal(t, "plain", ks[1].name)
	require.Equal(t, 8, ks[1].line)
	require.Equal(t, []param{
		{name: "p", kind: paramBuffer, attr: "buffer", index: 0, readOnly: true, addressSpace: true},
		{name: "in", kind: paramBuffer, attr: "buffer", index: 2, readOnly: true, addressSpace: true},
		{name: "out", kind: paramBuffer, attr: "buffer", index: 3, addressSpace: true},
		{name: "lane", kind: paramScalar, attr: "thread_index_in_simdgroup"},
	}, ks[1].params)
}

func TestFindKernelsErrors(t *testing.T) {
	cases := []struct{ src, err string }{
		{"kernel void k(device float* x) {}", `kernel k: line 1: parameter "device float * x" has no attribute such as [[buffer(0)]]`},
		{"kernel void k(device float* x [[buffer(N)]]) {}", `kernel k: line 1: parameter "device float * x [ [ buffer ( N ) ] ]": the buffer index must be an integer literal`},
		{"kernel void k(device float* x [[buffer(31)]]) {}", `kernel k: line 1: parameter "device float * x [ [ buffer ( 31 ) ] ]": buffer index 31 is not in 0..30`},
		{"kernel void k(device float x [[buffer(0)]]) {}", `kernel k: line 1: parameter "device float x [ [ buffer ( 0 ) ] ]": a buffer parameter must be a pointer or a reference`},
		{"kernel void k(threadgroup float* x [[threadgroup(0)]]) {}", `kernel k: line 1: parameter "threadgroup float * x [ [ threadgroup ( 0 ) ] ]": attribute [[threadgroup]] is not supported by msltest`},
		{"kernel void k(device float* a [[buffer(0)]], device float* b [[buffer(0)]]) {}", `kernel k: line 1: [[buffer(0)]] used twice`},
		{"kernel float k() {}", "line 1: expected `kernel void NAME(` at a kernel declaration"},
		{"kernel void k() {}\nkernel void k() {}", "line 2: kernel k declared twice"},
		{"kernel void k(device float* a [[buffer(0)]],) {}", "kernel k: line 1: empty parameter"},
	}
	for _, c := range cases {
		toks, err := lex(c.src)
		require.NoError(t, err)
		_, err = findKernels(toks)
		require.EqualError(t, err, c.err, c.src)
	}
}

func TestLexErrors(t *testing.T) {
	_, err := lex("a /* never closed")
	require.EqualError(t, err, "line 1: unterminated comment")
	_, err = lex("x\ns = \"abc\n")
	require.EqualError(t, err, "line 2: unterminated literal")
}
