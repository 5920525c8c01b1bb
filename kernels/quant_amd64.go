package kernels

// qAsmKernel returns the assembly kernel for bits-bit codes, or nil if there is none.
func qAsmKernel(bits int) qAsmFunc {
	switch bits {
	case 2:
		return qdot8b2
	case 3:
		return qdot8b3
	case 4:
		return qdot8b4
	case 5:
		return qdot8b5
	case 6:
		return qdot8b6
	case 8:
		return qdot8b8
	}
	return nil
}

// qdot8b4 is the qAsmFunc for 4-bit codes (quant_amd64.s).
//
//go:noescape
func qdot8b4(x *float32, p *byte, ldp uintptr, groups, supers int, sums, sc, bi *float32, tab *qTab, out *float32)

// qdot8b6 is the qAsmFunc for 6-bit codes.
//
//go:noescape
func qdot8b6(x *float32, p *byte, ldp uintptr, groups, supers int, sums, sc, bi *float32, tab *qTab, out *float32)

// qdot8b8 is the qAsmFunc for 8-bit codes.
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

// qdot8b2 is the qAsmFunc for 2-bit codes.
//
//go:noescape
func qdot8b2(x *float32, p *byte, ldp uintptr, groups, supers int, sums, sc, bi *float32, tab *qTab, out *float32)

// qdot8b3 is the qAsmFunc for 3-bit codes.
//
//go:noescape
func qdot8b3(x *float32, p *byte, ldp uintptr, groups, supers int, sums, sc, bi *float32, tab *qTab, out *float32)

// qdot8b5 is the qAsmFunc for 5-bit codes.
//
//go:noescape
func qdot8b5(x *float32, p *byte, ldp uintptr, groups, supers int, sums, sc, bi *float32, tab *qTab, out *float32)
