package kernels

// gemv16 runs the assembly over every row of out (useAVX512 must hold), one row at a
// time as a prefetched stream when stream is set (see halfRows).
func gemv16(dt DType, x []float32, ws []uint16, out []float32, stream bool) {
	k, n := len(x), len(out)
	ws = ws[:n*k]
	mask := uint16(1)<<(k%16) - 1
	if dt == BFloat16 {
		gemv16bf16(&x[0], &ws[0], uintptr(2*k), n, k/16, mask, stream, &out[0])
	} else {
		gemv16f16(&x[0], &ws[0], uintptr(2*k), n, k/16, mask, stream, &out[0])
	}
}

// gemm16x4 calls the blocked half linear for dt's weights (gemm16_amd64.s).
func gemm16x4(dt DType, x *float32, w *uint16, ldw, quads, k16 int, mask uint16, out *float32, ldo int) {
	if dt == BFloat16 {
		gemm16bf16x4(x, w, ldw, quads, k16, mask, out, ldo)
		return
	}
	gemm16f16x4(x, w, ldw, quads, k16, mask, out, ldo)
}

// The blocked half linear: four weight rows times four x rows a pass.
//
//go:noescape
func gemm16bf16x4(x *float32, w *uint16, ldw, quads, k16 int, mask uint16, out *float32, ldo int)

//go:noescape
func gemm16f16x4(x *float32, w *uint16, ldw, quads, k16 int, mask uint16, out *float32, ldo int)
