//go:build !amd64

package kernels

// useVNNI is false off amd64: quantized prompts take the float path.
const useVNNI = false

func q8Kernel(rows int, w *uint32, pstride int, ws *float32, wstride int, x *byte, ldx int, xs *byte, sumoff, groups, steps int, out *float32, ldo int) {
	panic("kernels: q8Kernel without assembly")
}

func q8QuantRow(x *float32, groups, vecs int, q *byte, d *float32) {
	panic("kernels: q8QuantRow without assembly")
}

// useAVX512BF16 is false off amd64: bfloat16 prompts take the float path.
const useAVX512BF16 = false

func bfKernel(rows int, w *uint32, pstride int, x *uint16, ldx, steps int, out *float32, ldo int) {
	panic("kernels: bfKernel without assembly")
}

func q8PanelDwords(dst *uint32, src *byte, ld, blocks int) {
	panic("kernels: q8PanelDwords without assembly")
}

func q8PanelNibbles(dst *uint32, src *byte, ld, blocks int) {
	panic("kernels: q8PanelNibbles without assembly")
}
