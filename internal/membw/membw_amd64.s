#include "textflag.h"

// func readAVX2(p *byte, n int) uint64
TEXT ·readAVX2(SB), NOSPLIT, $0-24
	MOVQ   p+0(FP), SI
	MOVQ   n+8(FP), CX
	VPXOR  Y0, Y0, Y0
	VPXOR  Y1, Y1, Y1
	VPXOR  Y2, Y2, Y2
	VPXOR  Y3, Y3, Y3
loop:
	VPXOR  0(SI), Y0, Y0
	VPXOR  32(SI), Y1, Y1
	VPXOR  64(SI), Y2, Y2
	VPXOR  96(SI), Y3, Y3
	ADDQ   $128, SI
	DECQ   CX
	JNZ    loop
	VPXOR  Y1, Y0, Y0
	VPXOR  Y3, Y2, Y2
	VPXOR  Y2, Y0, Y0
	VEXTRACTI128 $1, Y0, X1
	VPXOR  X1, X0, X0
	VPSRLDQ $8, X0, X1
	VPXOR  X1, X0, X0
	VMOVQ  X0, AX
	MOVQ   AX, ret+16(FP)
	VZEROUPPER
	RET

// func cpuid(eax, ecx uint32) (a, b, c, d uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL eax+0(FP), AX
	MOVL ecx+4(FP), CX
	CPUID
	MOVL AX, a+8(FP)
	MOVL BX, b+12(FP)
	MOVL CX, c+16(FP)
	MOVL DX, d+20(FP)
	RET

// func xgetbv() uint32
TEXT ·xgetbv(SB), NOSPLIT, $0-4
	MOVL $0, CX
	XGETBV
	MOVL AX, ret+0(FP)
	RET
