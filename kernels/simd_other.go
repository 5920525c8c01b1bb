//go:build !amd64

package kernels

// useAVX is false off amd64: the portable Go loops run.
const useAVX = false

func gemv8AVX(x, w *float32, ldw uintptr, out *float32, blocks, k4 int) {
	panic("kernels: gemv8AVX without AVX")
}

func axpyRowsAVX(y, a, v *float32, ldv uintptr, n, cols8 int) {
	panic("kernels: axpyRowsAVX without AVX")
}

const useAVX2 = false

func expAVX2(dst, src *float32, a, b float32, n8 int) { panic("kernels: expAVX2 without AVX2") }

func gdStep16AVX(s, k, q, v, y *float32, n int, decay, beta float32) {
	panic("kernels: gdStep16AVX without AVX")
}

func gdRowsAVX(s, src, k, q, v, y *float32, n, dk4 int, decay, beta float32) {
	panic("kernels: gdRowsAVX without AVX")
}

func gdRowsNT(s, src, k, q, v, y, tmp *float32, quads, dk4 int, decay, beta float32) {
	panic("kernels: gdRowsNT without AVX")
}

func binF32AVX(op int, dst, a, b *float32, n8 int) { panic("kernels: binF32AVX without AVX") }

// prefetchLines is a no-op off amd64: the hardware's own prefetchers are all there is.
func prefetchLines(p *float32, n int) {}
