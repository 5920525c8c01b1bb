package kernels

import "fmt"

// qAsmHas reports whether there is an assembly kernel for bits-bit codes.
func qAsmHas(bits int) bool {
	switch bits {
	case 2, 3, 4, 5, 6, 8:
		return true
	}
	return false
}

// qAsmDot8 calls the assembly kernel for bits-bit codes (qAsmHas(bits) must hold). A
// direct call, not a func value, so escape analysis sees the kernels keep no pointer
// and the caller's qSIMD stays on its stack.
func qAsmDot8(bits int, x *float32, p *byte, ldp uintptr, groups, supers int, sums, sc, bi *float32, tab *qTab, out *float32) {
	switch bits {
	case 2:
		qdot8b2(x, p, ldp, groups, supers, sums, sc, bi, tab, out)
	case 3:
		qdot8b3(x, p, ldp, groups, supers, sums, sc, bi, tab, out)
	case 4:
		qdot8b4(x, p, ldp, groups, supers, sums, sc, bi, tab, out)
	case 5:
		qdot8b5(x, p, ldp, groups, supers, sums, sc, bi, tab, out)
	case 6:
		qdot8b6(x, p, ldp, groups, supers, sums, sc, bi, tab, out)
	case 8:
		qdot8b8(x, p, ldp, groups, supers, sums, sc, bi, tab, out)
	default:
		panic(fmt.Sprintf("kernels: no assembly for %d-bit codes", bits))
	}
}

// qdot8b4 is the eight-row kernel (see qSIMD) for 4-bit codes (quant_amd64.s).
//
//go:noescape
func qdot8b4(x *float32, p *byte, ldp uintptr, groups, supers int, sums, sc, bi *float32, tab *qTab, out *float32)

// qdot8b6 is the eight-row kernel (see qSIMD) for 6-bit codes.
//
//go:noescape
func qdot8b6(x *float32, p *byte, ldp uintptr, groups, supers int, sums, sc, bi *float32, tab *qTab, out *float32)

// qdot8b8 is the eight-row kernel (see qSIMD) for 8-bit codes.
//
//go:noescape
func qdot8b8(x *float32, p *byte, ldp uintptr, groups, supers int, sums, sc, bi *float32, tab *qTab, out *float32)

// useF16C says whether the CPU converts half floats (CPUID leaf 1, ECX bit 29), which
// the scale widening of the assembly path uses.
var useF16C = useAVX && detectF16C()

func detectF16C() bool {
	_, _, c, _ := cpuid(1, 0)
	return c&(1<<29) != 0
}

// f16ToF32F16C widens n8*8 halves at src into dst with VCVTPH2PS, bit for bit as
// F16ToF32 (a NaN keeps its sign and payload and becomes quiet in both).
//
//go:noescape
func f16ToF32F16C(dst *float32, src *uint16, n8 int)

// qdot8b2 is the eight-row kernel (see qSIMD) for 2-bit codes.
//
//go:noescape
func qdot8b2(x *float32, p *byte, ldp uintptr, groups, supers int, sums, sc, bi *float32, tab *qTab, out *float32)

// qdot8b3 is the eight-row kernel (see qSIMD) for 3-bit codes.
//
//go:noescape
func qdot8b3(x *float32, p *byte, ldp uintptr, groups, supers int, sums, sc, bi *float32, tab *qTab, out *float32)

// qdot8b5 is the eight-row kernel (see qSIMD) for 5-bit codes.
//
//go:noescape
func qdot8b5(x *float32, p *byte, ldp uintptr, groups, supers int, sums, sc, bi *float32, tab *qTab, out *float32)

// qAsmDecode8 decodes n 16-code super-blocks of eight rows of bits-bit codes (ldp
// bytes apart) into dst (n*128 floats) in the order qdot8f reads them.
func qAsmDecode8(bits int, p *byte, ldp uintptr, n int, tab *qTab, dst *float32) {
	switch bits {
	case 2:
		qdec8b2(p, ldp, n, tab, dst)
	case 3:
		qdec8b3(p, ldp, n, tab, dst)
	case 4:
		qdec8b4(p, ldp, n, tab, dst)
	case 5:
		qdec8b5(p, ldp, n, tab, dst)
	case 6:
		qdec8b6(p, ldp, n, tab, dst)
	case 8:
		qdec8b8(p, ldp, n, tab, dst)
	default:
		panic(fmt.Sprintf("kernels: no assembly for %d-bit codes", bits))
	}
}

// qdec8b2 is the block decoder (see qAsmDecode8) for 2-bit codes.
//
//go:noescape
func qdec8b2(p *byte, ldp uintptr, n int, tab *qTab, dst *float32)

// qdec8b3 is the block decoder (see qAsmDecode8) for 3-bit codes.
//
//go:noescape
func qdec8b3(p *byte, ldp uintptr, n int, tab *qTab, dst *float32)

// qdec8b4 is the block decoder (see qAsmDecode8) for 4-bit codes.
//
//go:noescape
func qdec8b4(p *byte, ldp uintptr, n int, tab *qTab, dst *float32)

// qdec8b5 is the block decoder (see qAsmDecode8) for 5-bit codes.
//
//go:noescape
func qdec8b5(p *byte, ldp uintptr, n int, tab *qTab, dst *float32)

// qdec8b6 is the block decoder (see qAsmDecode8) for 6-bit codes.
//
//go:noescape
func qdec8b6(p *byte, ldp uintptr, n int, tab *qTab, dst *float32)

// qdec8b8 is the block decoder (see qAsmDecode8) for 8-bit codes.
//
//go:noescape
func qdec8b8(p *byte, ldp uintptr, n int, tab *qTab, dst *float32)

// qdot8f is the eight-row kernel on a block decoded by qAsmDecode8: the same sums in
// the same order as the qdot8bN kernels.
//
//go:noescape
func qdot8f(x, d *float32, groups, supers int, sums, sc, bi *float32, tab *qTab, out *float32)

// qdot8f2 is qdot8f for two x rows at once (two independent accumulator sets hide
// the add latency; the decoded codes and the scales are read once).
//
//go:noescape
func qdot8f2(x0, x1, d *float32, groups, supers int, sums0, sums1, sc, bi *float32, tab *qTab, out0, out1 *float32)
