#include "textflag.h"

// func gateSiluAVX(y, z *float32, n8 int, c *[10]float64, tab *[32]float64)
//
// y[i] *= float32(float64(z[i]) / (1 + expF64(-float64(z[i])))) for n8*8 elements:
// gateSilu's definition (norm.go), operation by operation in float64 as expF64 computes
// (no fused multiply-adds), 8 lanes at a time. c holds expF64's constants (gateConsts).
TEXT ·gateSiluAVX(SB), NOSPLIT, $0-40
	MOVQ y+0(FP), DI
	MOVQ z+8(FP), SI
	MOVQ n8+16(FP), CX
	MOVQ c+24(FP), DX
	MOVQ tab+32(FP), AX
	VBROADCASTSD 0(DX), Z20  // 32 log2(e)
	VBROADCASTSD 8(DX), Z21  // expRound
	VBROADCASTSD 16(DX), Z22 // ln2 / 32
	VBROADCASTSD 24(DX), Z23 // 1/6
	VBROADCASTSD 32(DX), Z24 // 0.5
	VBROADCASTSD 40(DX), Z25 // 1/120
	VBROADCASTSD 48(DX), Z26 // 1/24
	VBROADCASTSD 56(DX), Z27 // 1
	VBROADCASTSD 64(DX), Z28 // 89
	VBROADCASTSD 72(DX), Z29 // -104
	MOVQ $0x8000000000000000, BX
	VPBROADCASTQ BX, Z30     // the sign bit
	MOVQ $0x7ff0000000000000, BX
	VPBROADCASTQ BX, Z31     // +Inf
	MOVQ $31, BX
	VPBROADCASTQ BX, Z19
	MOVQ $1023, BX
	VPBROADCASTQ BX, Z18
loop:
	VCVTPS2PD (SI), Z0       // g
	VXORPD    Z30, Z0, Z1    // x = -g
	VMULPD    Z20, Z1, Z2
	VADDPD    Z21, Z2, Z2    // t
	VPSLLQ    $32, Z2, Z5
	VPSRAQ    $32, Z5, Z5    // k: t's low 32 bits, sign-extended
	VSUBPD    Z21, Z2, Z3
	VMULPD    Z22, Z3, Z3
	VSUBPD    Z3, Z1, Z3     // r = x - (t - expRound) * (ln2/32)
	VMULPD    Z3, Z3, Z4     // r2
	VADDPD    Z27, Z3, Z6    // 1 + r
	VMULPD    Z23, Z3, Z7
	VADDPD    Z24, Z7, Z7    // 0.5 + r/6
	VMULPD    Z25, Z3, Z8
	VADDPD    Z26, Z8, Z8    // 1/24 + r/120
	VMULPD    Z8, Z4, Z8
	VADDPD    Z8, Z7, Z7
	VMULPD    Z7, Z4, Z7
	VADDPD    Z7, Z6, Z6     // p
	VPANDQ    Z19, Z5, Z8    // k & 31
	KXNORB    K1, K1, K1
	VGATHERQPD (AX)(Z8*8), K1, Z9
	VMULPD    Z9, Z6, Z6     // p * 2^((k&31)/32)
	VPSRAQ    $5, Z5, Z5
	VPADDQ    Z18, Z5, Z5
	VPSLLQ    $52, Z5, Z5
	VMULPD    Z5, Z6, Z6     // e, in range
	VCMPPD    $0x1e, Z28, Z1, K2 // x > 89: +Inf
	VMOVAPD   Z31, K2, Z6
	VCMPPD    $0x19, Z29, Z1, K3 // !(x >= -104): 0, or x itself if NaN
	VPXORQ    Z7, Z7, Z7
	VMOVAPD   Z7, K3, Z6
	VCMPPD    $3, Z1, Z1, K4
	VMOVAPD   Z1, K4, Z6
	VADDPD    Z27, Z6, Z6    // 1 + e
	VDIVPD    Z6, Z0, Z0     // g / (1 + e)
	VCVTPD2PS Z0, Y0
	VMULPS    (DI), Y0, Y0
	VMOVUPS   Y0, (DI)
	ADDQ      $32, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       loop
	VZEROUPPER
	RET
