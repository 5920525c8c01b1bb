#include "textflag.h"

// bfloat16 <-> float32 over blocks of 16 (bf16.go defines them: BF16ToF32 and
// F32ToBF16 per element).

// func widenBF16AVX(dst *float32, src *uint16, n16 int)
TEXT ·widenBF16AVX(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n16+16(FP), CX
loop:
	VPMOVZXWD (SI), Z0
	VPSLLD    $16, Z0, Z0
	VMOVDQU32 Z0, (DI)
	ADDQ      $32, SI
	ADDQ      $64, DI
	DECQ      CX
	JNZ       loop
	VZEROUPPER
	RET

// func narrowBF16AVX(dst *uint16, src *float32, n16 int)
// Per lane, as F32ToBF16: u + 0x7fff + ((u >> 16) & 1), shifted down 16; a NaN (|u| >
// 0x7f800000) gives (u >> 16) | 0x40 instead.
TEXT ·narrowBF16AVX(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n16+16(FP), CX
	MOVL $0x7fff, AX
	VPBROADCASTD AX, Z10
	MOVL $1, AX
	VPBROADCASTD AX, Z11
	MOVL $0x7fffffff, AX
	VPBROADCASTD AX, Z12
	MOVL $0x7f800000, AX
	VPBROADCASTD AX, Z13
	MOVL $0x40, AX
	VPBROADCASTD AX, Z14
nloop:
	VMOVDQU32 (SI), Z0
	VPSRLD    $16, Z0, Z1
	VPANDD    Z11, Z1, Z2
	VPADDD    Z10, Z2, Z2
	VPADDD    Z0, Z2, Z2
	VPSRLD    $16, Z2, Z2
	VPANDD    Z12, Z0, Z3
	VPCMPUD   $6, Z13, Z3, K1
	VPORD     Z14, Z1, K1, Z2
	VPMOVDW   Z2, (DI)
	ADDQ      $64, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       nloop
	VZEROUPPER
	RET
