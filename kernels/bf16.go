package kernels

// Whole-slice bfloat16 conversions, for the places that convert a row at a time (a
// bfloat16 model's activations, the half linear's input and output, casts). They give
// exactly BF16ToF32 and F32ToBF16 per element (the definitions): the AVX-512 loops
// (bf16_amd64.s) take blocks of 16, the Go loop the rest.

// widenBF16 writes dst[i] = BF16ToF32(src[i]) for every i < len(dst).
func widenBF16(dst []float32, src []uint16) {
	src = src[:len(dst)]
	i := 0
	if n16 := len(dst) / 16; useAVX512 && n16 > 0 {
		widenBF16AVX(&dst[0], &src[0], n16)
		i = 16 * n16
	}
	for ; i < len(dst); i++ {
		dst[i] = BF16ToF32(src[i])
	}
}

// narrowBF16 writes dst[i] = F32ToBF16(src[i]) (round to nearest even, NaNs kept
// quiet) for every i < len(dst).
func narrowBF16(dst []uint16, src []float32) {
	src = src[:len(dst)]
	i := 0
	if n16 := len(dst) / 16; useAVX512 && n16 > 0 {
		narrowBF16AVX(&dst[0], &src[0], n16)
		i = 16 * n16
	}
	for ; i < len(dst); i++ {
		dst[i] = F32ToBF16(src[i])
	}
}
