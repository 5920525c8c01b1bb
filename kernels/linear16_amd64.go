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
