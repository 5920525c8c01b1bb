//go:build !amd64

package kernels

func gdRows512(s, k, q, v, y *float32, n16, dk4 int, decay, beta float32) {
	panic("kernels: gdRows512 without AVX-512")
}
