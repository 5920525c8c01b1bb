//go:build !amd64

package kernels

func widenBF16AVX(dst *float32, src *uint16, n16 int) {
	panic("kernels: widenBF16AVX without assembly")
}

func narrowBF16AVX(dst *uint16, src *float32, n16 int) {
	panic("kernels: narrowBF16AVX without assembly")
}
