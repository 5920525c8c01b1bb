#include "textflag.h"
#include "quant16_amd64.h"

// The 16-lane kernels for 4-bit codes, one per group size (see quant16_amd64.h).
// func qmv16b4c1(x *float32, p *byte, rows, groups, dt int, sums, sc, bi, scr, out *float32, sstride, blocks int, mask uint16)
TEXT ·qmv16b4c1(SB), NOSPLIT, $0-98
	MOVQ x+0(FP), SI
	MOVQ p+8(FP), R15
	MOVQ rows+16(FP), CX
	MOVQ groups+24(FP), DX
	MOVQ dt+32(FP), DI
	MOVQ sums+40(FP), R8
	MOVQ sc+48(FP), R9
	MOVQ bi+56(FP), R10
	MOVQ scr+64(FP), BX
	MOVQ out+72(FP), R11
	MOVQ blocks+88(FP), AX
	KMOVW mask+96(FP), K1
	VMOVUPS ·qIota16(SB), Z31
row:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	MOVQ   BX, R13
	MOVQ   R8, R12
	XORQ   R14, R14
	CMPQ   DI, $1
	JEQ    bf16
	JGT    f16
	TESTQ AX, AX
	JZ    f32tail
f32blk:
	VMOVUPS (R9)(R14*4), Z8
	VMOVUPS (R10)(R14*4), Z9
	BLOCKEND
	MOVQ  AX, DX
	SHLQ  $4, DX
	CMPQ  R14, DX
	JLT   f32blk
f32tail:
	KORTESTW K1, K1
	JZ       main
	VMOVUPS.Z (R9)(R14*4), K1, Z8
	VMOVUPS.Z (R10)(R14*4), K1, Z9
	BLOCKEND
	JMP main
bf16:
	TESTQ AX, AX
	JZ    bf16tail
bf16blk:
	VPMOVZXWD (R9)(R14*2), Z8
	VPSLLD $16, Z8, Z8
	VPMOVZXWD (R10)(R14*2), Z9
	VPSLLD $16, Z9, Z9
	BLOCKEND
	MOVQ  AX, DX
	SHLQ  $4, DX
	CMPQ  R14, DX
	JLT   bf16blk
bf16tail:
	KORTESTW K1, K1
	JZ       main
	VPMOVZXWD.Z (R9)(R14*2), K1, Z8
	VPSLLD $16, Z8, Z8
	VPMOVZXWD.Z (R10)(R14*2), K1, Z9
	VPSLLD $16, Z9, Z9
	BLOCKEND
	JMP main
f16:
	TESTQ AX, AX
	JZ    f16tail
f16blk:
	VCVTPH2PS (R9)(R14*2), Z8
	VCVTPH2PS (R10)(R14*2), Z9
	BLOCKEND
	MOVQ  AX, DX
	SHLQ  $4, DX
	CMPQ  R14, DX
	JLT   f16blk
f16tail:
	KORTESTW K1, K1
	JZ       main
	VCVTPH2PS.Z (R9)(R14*2), K1, Z8
	VCVTPH2PS.Z (R10)(R14*2), K1, Z9
	BLOCKEND
	JMP main
main:
	MOVQ groups+24(FP), DX
	MOVQ SI, R12
	MOVQ BX, R13
	VPXORD Z10, Z10, Z10
	MOVQ DX, R14
	SHRQ $1, R14
	JZ   gtail
grp:
	Q4FIRST(0, 0)
	VFMADD231PS.BCST 0(R13), Z4, Z0
	Q4FIRST(16, 128)
	VFMADD231PS.BCST 4(R13), Z4, Z10
	ADDQ $32, R15
	ADDQ $256, R12
	ADDQ $8, R13
	DECQ R14
	JNZ  grp
gtail:
	TESTQ $1, DX
	JZ    gend
	Q4FIRST(0, 0)
	VFMADD231PS.BCST 0(R13), Z4, Z0
	ADDQ $16, R15
	ADDQ $128, R12
	ADDQ $4, R13
gend:
	VADDPS Z10, Z0, Z0
	// lanes: (even + odd groups) + bias lanes; reduce16: lanes l+8, l+4, l+2, l+1 onto l.
	VADDPS Z1, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y2
	VADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X2
	VADDPS X2, X0, X0
	VMOVHLPS X0, X0, X2
	VADDPS X2, X0, X0
	VMOVSHDUP X0, X2
	VADDSS X2, X0, X0
	VMOVSS X0, (R11)
	ADDQ $4, R11
	ADDQ sstride+80(FP), R9
	ADDQ sstride+80(FP), R10
	DECQ CX
	JNZ row
	VZEROUPPER
	RET

// func qmv16b4c2(x *float32, p *byte, rows, groups, dt int, sums, sc, bi, scr, out *float32, sstride, blocks int, mask uint16)
TEXT ·qmv16b4c2(SB), NOSPLIT, $0-98
	MOVQ x+0(FP), SI
	MOVQ p+8(FP), R15
	MOVQ rows+16(FP), CX
	MOVQ groups+24(FP), DX
	MOVQ dt+32(FP), DI
	MOVQ sums+40(FP), R8
	MOVQ sc+48(FP), R9
	MOVQ bi+56(FP), R10
	MOVQ scr+64(FP), BX
	MOVQ out+72(FP), R11
	MOVQ blocks+88(FP), AX
	KMOVW mask+96(FP), K1
	VMOVUPS ·qIota16(SB), Z31
row:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	MOVQ   BX, R13
	MOVQ   R8, R12
	XORQ   R14, R14
	CMPQ   DI, $1
	JEQ    bf16
	JGT    f16
	TESTQ AX, AX
	JZ    f32tail
f32blk:
	VMOVUPS (R9)(R14*4), Z8
	VMOVUPS (R10)(R14*4), Z9
	BLOCKEND
	MOVQ  AX, DX
	SHLQ  $4, DX
	CMPQ  R14, DX
	JLT   f32blk
f32tail:
	KORTESTW K1, K1
	JZ       main
	VMOVUPS.Z (R9)(R14*4), K1, Z8
	VMOVUPS.Z (R10)(R14*4), K1, Z9
	BLOCKEND
	JMP main
bf16:
	TESTQ AX, AX
	JZ    bf16tail
bf16blk:
	VPMOVZXWD (R9)(R14*2), Z8
	VPSLLD $16, Z8, Z8
	VPMOVZXWD (R10)(R14*2), Z9
	VPSLLD $16, Z9, Z9
	BLOCKEND
	MOVQ  AX, DX
	SHLQ  $4, DX
	CMPQ  R14, DX
	JLT   bf16blk
bf16tail:
	KORTESTW K1, K1
	JZ       main
	VPMOVZXWD.Z (R9)(R14*2), K1, Z8
	VPSLLD $16, Z8, Z8
	VPMOVZXWD.Z (R10)(R14*2), K1, Z9
	VPSLLD $16, Z9, Z9
	BLOCKEND
	JMP main
f16:
	TESTQ AX, AX
	JZ    f16tail
f16blk:
	VCVTPH2PS (R9)(R14*2), Z8
	VCVTPH2PS (R10)(R14*2), Z9
	BLOCKEND
	MOVQ  AX, DX
	SHLQ  $4, DX
	CMPQ  R14, DX
	JLT   f16blk
f16tail:
	KORTESTW K1, K1
	JZ       main
	VCVTPH2PS.Z (R9)(R14*2), K1, Z8
	VCVTPH2PS.Z (R10)(R14*2), K1, Z9
	BLOCKEND
	JMP main
main:
	MOVQ groups+24(FP), DX
	MOVQ SI, R12
	MOVQ BX, R13
	VPXORD Z10, Z10, Z10
	MOVQ DX, R14
	SHRQ $1, R14
	JZ   gtail
grp:
	Q4FIRST(0, 0)
	Q4NEXT(16, 128)
	VFMADD231PS.BCST 0(R13), Z4, Z0
	Q4FIRST(32, 256)
	Q4NEXT(48, 384)
	VFMADD231PS.BCST 4(R13), Z4, Z10
	ADDQ $64, R15
	ADDQ $512, R12
	ADDQ $8, R13
	DECQ R14
	JNZ  grp
gtail:
	TESTQ $1, DX
	JZ    gend
	Q4FIRST(0, 0)
	Q4NEXT(16, 128)
	VFMADD231PS.BCST 0(R13), Z4, Z0
	ADDQ $32, R15
	ADDQ $256, R12
	ADDQ $4, R13
gend:
	VADDPS Z10, Z0, Z0
	// lanes: (even + odd groups) + bias lanes; reduce16: lanes l+8, l+4, l+2, l+1 onto l.
	VADDPS Z1, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y2
	VADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X2
	VADDPS X2, X0, X0
	VMOVHLPS X0, X0, X2
	VADDPS X2, X0, X0
	VMOVSHDUP X0, X2
	VADDSS X2, X0, X0
	VMOVSS X0, (R11)
	ADDQ $4, R11
	ADDQ sstride+80(FP), R9
	ADDQ sstride+80(FP), R10
	DECQ CX
	JNZ row
	VZEROUPPER
	RET

// func qmv16b4c4(x *float32, p *byte, rows, groups, dt int, sums, sc, bi, scr, out *float32, sstride, blocks int, mask uint16)
TEXT ·qmv16b4c4(SB), NOSPLIT, $0-98
	MOVQ x+0(FP), SI
	MOVQ p+8(FP), R15
	MOVQ rows+16(FP), CX
	MOVQ groups+24(FP), DX
	MOVQ dt+32(FP), DI
	MOVQ sums+40(FP), R8
	MOVQ sc+48(FP), R9
	MOVQ bi+56(FP), R10
	MOVQ scr+64(FP), BX
	MOVQ out+72(FP), R11
	MOVQ blocks+88(FP), AX
	KMOVW mask+96(FP), K1
	VMOVUPS ·qIota16(SB), Z31
row:
	VPXORD Z0, Z0, Z0
	VPXORD Z1, Z1, Z1
	MOVQ   BX, R13
	MOVQ   R8, R12
	XORQ   R14, R14
	CMPQ   DI, $1
	JEQ    bf16
	JGT    f16
	TESTQ AX, AX
	JZ    f32tail
f32blk:
	VMOVUPS (R9)(R14*4), Z8
	VMOVUPS (R10)(R14*4), Z9
	BLOCKEND
	MOVQ  AX, DX
	SHLQ  $4, DX
	CMPQ  R14, DX
	JLT   f32blk
f32tail:
	KORTESTW K1, K1
	JZ       main
	VMOVUPS.Z (R9)(R14*4), K1, Z8
	VMOVUPS.Z (R10)(R14*4), K1, Z9
	BLOCKEND
	JMP main
bf16:
	TESTQ AX, AX
	JZ    bf16tail
bf16blk:
	VPMOVZXWD (R9)(R14*2), Z8
	VPSLLD $16, Z8, Z8
	VPMOVZXWD (R10)(R14*2), Z9
	VPSLLD $16, Z9, Z9
	BLOCKEND
	MOVQ  AX, DX
	SHLQ  $4, DX
	CMPQ  R14, DX
	JLT   bf16blk
bf16tail:
	KORTESTW K1, K1
	JZ       main
	VPMOVZXWD.Z (R9)(R14*2), K1, Z8
	VPSLLD $16, Z8, Z8
	VPMOVZXWD.Z (R10)(R14*2), K1, Z9
	VPSLLD $16, Z9, Z9
	BLOCKEND
	JMP main
f16:
	TESTQ AX, AX
	JZ    f16tail
f16blk:
	VCVTPH2PS (R9)(R14*2), Z8
	VCVTPH2PS (R10)(R14*2), Z9
	BLOCKEND
	MOVQ  AX, DX
	SHLQ  $4, DX
	CMPQ  R14, DX
	JLT   f16blk
f16tail:
	KORTESTW K1, K1
	JZ       main
	VCVTPH2PS.Z (R9)(R14*2), K1, Z8
	VCVTPH2PS.Z (R10)(R14*2), K1, Z9
	BLOCKEND
	JMP main
main:
	MOVQ groups+24(FP), DX
	MOVQ SI, R12
	MOVQ BX, R13
	VPXORD Z10, Z10, Z10
	MOVQ DX, R14
	SHRQ $1, R14
	JZ   gtail
grp:
	Q4FIRST(0, 0)
	Q4NEXT(16, 128)
	Q4NEXT(32, 256)
	Q4NEXT(48, 384)
	VFMADD231PS.BCST 0(R13), Z4, Z0
	Q4FIRST(64, 512)
	Q4NEXT(80, 640)
	Q4NEXT(96, 768)
	Q4NEXT(112, 896)
	VFMADD231PS.BCST 4(R13), Z4, Z10
	ADDQ $128, R15
	ADDQ $1024, R12
	ADDQ $8, R13
	DECQ R14
	JNZ  grp
gtail:
	TESTQ $1, DX
	JZ    gend
	Q4FIRST(0, 0)
	Q4NEXT(16, 128)
	Q4NEXT(32, 256)
	Q4NEXT(48, 384)
	VFMADD231PS.BCST 0(R13), Z4, Z0
	ADDQ $64, R15
	ADDQ $512, R12
	ADDQ $4, R13
gend:
	VADDPS Z10, Z0, Z0
	// lanes: (even + odd groups) + bias lanes; reduce16: lanes l+8, l+4, l+2, l+1 onto l.
	VADDPS Z1, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y2
	VADDPS Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X2
	VADDPS X2, X0, X0
	VMOVHLPS X0, X0, X2
	VADDPS X2, X0, X0
	VMOVSHDUP X0, X2
	VADDSS X2, X0, X0
	VMOVSS X0, (R11)
	ADDQ $4, R11
	ADDQ sstride+80(FP), R9
	ADDQ sstride+80(FP), R10
	DECQ CX
	JNZ row
	VZEROUPPER
	RET
