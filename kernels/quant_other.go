//go:build !amd64

package kernels

// qAsmHas is false off amd64: the portable loops run.
func qAsmHas(bits int) bool { return false }

func qAsmDot8(bits int, x *float32, p *byte, ldp uintptr, groups, supers int, sums, sc, bi *float32, tab *qTab, out *float32) {
	panic("kernels: qAsmDot8 without assembly")
}

const useF16C = false

func f16ToF32F16C(dst *float32, src *uint16, n8 int) { panic("kernels: f16ToF32F16C without F16C") }

func qAsmDecode8(bits int, p *byte, ldp uintptr, n int, tab *qTab, dst *float32) {
	panic("kernels: qAsmDecode8 without assembly")
}

func qdot8f(x, d *float32, groups, supers int, sums, sc, bi *float32, tab *qTab, out *float32) {
	panic("kernels: qdot8f without assembly")
}

func qdot8f2(x0, x1, d *float32, groups, supers int, sums0, sums1, sc, bi *float32, tab *qTab, out0, out1 *float32) {
	panic("kernels: qdot8f2 without assembly")
}

func qAsm16() bool { return false }

func qmv16(bits, chunks int, x *float32, p *byte, rows, groups, dt int, sums, sc, bi, scr, out *float32, sstride, blocks int, mask uint16) {
	panic("kernels: qmv16 without assembly")
}

const useAVX512 = false

func gemv16(dt DType, x []float32, ws []uint16, out []float32, stream bool) {
	panic("kernels: gemv16 without assembly")
}

func qmm16x4(bits int, x *float32, p *byte, ldp, pairs, groups, chunks int, sums *float32, blocks int, sc, bi *float32, sstride int, out *float32, ldo int) {
	panic("kernels: qmm16x4 without assembly")
}

func qmm16x4w4(bits int, x *float32, p *byte, ldp, quads, groups, chunks int, sums *float32, blocks int, sc, bi *float32, sstride int, out *float32, ldo int, acc *float32) {
	panic("kernels: qmm16x4w4 without assembly")
}

func qmm16w1(bits, xr int, x *float32, xs int, p *byte, ldp, rows, groups, chunks int, sums *float32, ss, blocks int, sc, bi *float32, sstride int, out *float32, ldo int) {
	panic("kernels: qmm16w1 without assembly")
}

func qmm16w1h(bits, xr int, x *float32, xs int, p *byte, ldp, rows, groups, chunks int, sums *float32, ss, blocks int, sc, bi *uint16, sstride int, out *float32, ldo int) {
	panic("kernels: qmm16w1h without assembly")
}

func gemm16x4(dt DType, x *float32, w *uint16, ldw, quads, k16 int, mask uint16, out *float32, ldo int) {
	panic("kernels: gemm16x4 without assembly")
}
