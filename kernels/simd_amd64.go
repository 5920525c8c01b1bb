package kernels

// useAVX says whether the CPU and OS support the 256-bit AVX instructions the assembly
// kernels use (VMULPS/VADDPS on ymm, no FMA, so they round exactly as the Go loops).
var useAVX = detectAVX()

// detectAVX checks CPUID leaf 1 for AVX and OSXSAVE and XCR0 for the OS saving the xmm
// and ymm state.
func detectAVX() bool {
	_, _, c, _ := cpuid(1, 0)
	const osxsave, avx = 1 << 27, 1 << 28
	if c&osxsave == 0 || c&avx == 0 {
		return false
	}
	return xgetbv()&6 == 6
}

// cpuid executes CPUID with EAX = eax and ECX = ecx.
func cpuid(eax, ecx uint32) (a, b, c, d uint32)

// xgetbv returns the low word of XCR0.
func xgetbv() uint32

// gemv8AVX computes blocks*8 dot products out[r] = dot(x, w row r) in mmDot's order, rows
// ldw bytes apart, each of 4*k4 floats. The caller checks every bound.
//
//go:noescape
func gemv8AVX(x, w *float32, ldw uintptr, out *float32, blocks, k4 int)

// axpyRowsAVX adds sum_j a[j] * v row j (rows ldv bytes apart) to y, key by key in order,
// over cols8*8 columns (cols8 1, 2 or 4), skipping a[j] == 0.
//
//go:noescape
func axpyRowsAVX(y, a, v *float32, ldv uintptr, n, cols8 int)

// useAVX2 adds AVX2's 256-bit integer instructions (CPUID leaf 7, EBX bit 5), which
// expAVX2 needs to build 2^k.
var useAVX2 = useAVX && detectAVX2()

func detectAVX2() bool {
	_, b, _, _ := cpuid(7, 0)
	return b&(1<<5) != 0
}

// expAVX2 writes dst[i] = exp32(a*src[i] - b) for n8*8 elements.
//
//go:noescape
func expAVX2(dst, src *float32, a, b float32, n8 int)

// gdStep16AVX runs gdStep16 over n state rows (16 floats each) with the same rounding.
// The caller checks every bound.
//
//go:noescape
func gdStep16AVX(s, k, q, v, y *float32, n int, decay, beta float32)

// gdRowsAVX runs gdDecayDot then gdUpdateDot over n state rows of 4*dk4 floats each,
// with the same rounding: rows are read from src, scaled and updated into s (src may
// be s), y[i] gets row i dotted with q. The caller checks every bound.
//
//go:noescape
func gdRowsAVX(s, src, k, q, v, y *float32, n, dk4 int, decay, beta float32)

// gdRowsNT is gdRowsAVX over quads*4 rows for a new state that no one reads soon:
// the rows go to s by non-temporal stores (tmp: 16*dk4 floats of scratch). s must be
// 16-byte aligned and apart from src.
//
//go:noescape
func gdRowsNT(s, src, k, q, v, y, tmp *float32, quads, dk4 int, decay, beta float32)

// binF32AVX writes dst[i] = a[i] op b[i] for n8*8 elements (op 0 add, 1 sub, 2 mul, 3 div).
// The caller checks every bound.
//
//go:noescape
func binF32AVX(op int, dst, a, b *float32, n8 int)

// prefetchLines asks for the cache lines holding the n floats from p into L2
// (PREFETCHT1). A hint: it never faults and changes no value.
//
//go:noescape
func prefetchLines(p *float32, n int)
