package kernels

// widenBF16AVX writes n16*16 floats widened from bfloat16 (useAVX512 must hold).
//
//go:noescape
func widenBF16AVX(dst *float32, src *uint16, n16 int)

// narrowBF16AVX writes n16*16 bfloat16 values rounded as F32ToBF16 rounds (useAVX512
// must hold).
//
//go:noescape
func narrowBF16AVX(dst *uint16, src *float32, n16 int)
