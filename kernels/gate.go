package kernels

import "math"

// gateSilu multiplies y by silu(z) element by element, the gate of the gated RMSNorm
// (gated_rms_norm, and the GDN block's copy of its arithmetic): silu in float64 with
// expF64, rounded to float32 once, then one float32 multiply. The AVX-512 loop
// (gate_amd64.s) repeats expF64's operations in the same order on 8 lanes; the Go loop
// is the definition and takes the tail.
func gateSilu(y, z []float32) {
	z = z[:len(y)]
	i := 0
	if n8 := len(y) / 8; useAVX512 && n8 > 0 {
		gateSiluAVX(&y[0], &z[0], n8, &gateConsts, &exp2Frac)
		i = 8 * n8
	}
	for ; i < len(y); i++ {
		g := float64(z[i])
		y[i] *= float32(g / (1 + expF64(-g)))
	}
}

// gateConsts are expF64's constants as the assembly reads them, each the float64 the
// Go expression rounds to: 32 log2(e), expRound, ln2/32, the polynomial's 1/6, 0.5,
// 1/120, 1/24, then 1, and the range ends 89 and -104.
var gateConsts = [10]float64{32 * math.Log2E, expRound, math.Ln2 / 32, 1.0 / 6, 0.5, 1.0 / 120, 1.0 / 24, 1, 89, -104}
