#include "textflag.h"

// Eight-row quantized dot products (see quant_simd.go for the order they keep).
//
// Registers: SI walks x, R10 rows 0-3 and R11 rows 4-7 of the packed block (BX = row
// stride, R9 = 3 strides), R12/R13/R14 walk the scales, biases and group sums, CX
// counts groups and R8 the 16-code super-blocks of a group (AX supers per group).
// Y0-Y3 accumulate one group for rows (0,1), (2,3), (4,5), (6,7), a row's four lanes
// per 128-bit half; Y7 accumulates the eight rows' results; Y8 holds the gather
// indices, Y11-Y14 the chunk shifts, Y15 the code mask. The qmm kernels (qdec8bN,
// qdot8f, qdot8f2) use the same names for the same roles where they have them.

// QPAIR adds x*codes for one chunk of two rows (a: the low row's uint32, b: the high
// row's) into acc: broadcast each row's word to its half, shift each lane's code down,
// mask, convert (exact), multiply, add.
#define QPAIR(a, b, s, acc) \
	VPBROADCASTD a, Y5; \
	VPBROADCASTD b, Y6; \
	VPBLENDD     $0xF0, Y6, Y5, Y5; \
	VPSRLVD      s, Y5, Y5; \
	VPAND        Y15, Y5, Y5; \
	VCVTDQ2PS    Y5, Y5; \
	VMULPS       Y4, Y5, Y5; \
	VADDPS       Y5, acc, acc

// QCHUNK handles chunk k of the super-block for all eight rows: x[4k..4k+3] (at xoff
// bytes) in both halves of Y4, the codes' word at byte off of each row.
#define QCHUNK(xoff, off, s) \
	VBROADCASTF128 xoff(SI), Y4; \
	QPAIR(off(R10), off(R10)(BX*1), s, Y0); \
	QPAIR(off(R10)(BX*2), off(R10)(R9*1), s, Y1); \
	QPAIR(off(R11), off(R11)(BX*1), s, Y2); \
	QPAIR(off(R11)(BX*2), off(R11)(R9*1), s, Y3)

// QSUPER handles 16 codes of every row (2*bits bytes, stride) with the chunk word
// offsets o0..o3 (qChunkOffset) and moves on.
#define QSUPER(o0, o1, o2, o3, stride) \
	QCHUNK(0, o0, Y11); \
	QCHUNK(16, o1, Y12); \
	QCHUNK(32, o2, Y13); \
	QCHUNK(48, o3, Y14); \
	ADDQ $64, SI; \
	ADDQ $stride, R10; \
	ADDQ $stride, R11

// QPAIR2 is QPAIR for two consecutive chunks whose codes share one word (bits <= 4):
// one load per row, the first chunk (x in Y4, shifts s0) added before the second (x
// in Y9, shifts s1), as the lane order requires.
#define QPAIR2(a, b, s0, s1, acc) \
	VPBROADCASTD a, Y5; \
	VPBROADCASTD b, Y6; \
	VPBLENDD     $0xF0, Y6, Y5, Y5; \
	VPSRLVD      s0, Y5, Y6; \
	VPAND        Y15, Y6, Y6; \
	VCVTDQ2PS    Y6, Y6; \
	VMULPS       Y4, Y6, Y6; \
	VADDPS       Y6, acc, acc; \
	VPSRLVD      s1, Y5, Y5; \
	VPAND        Y15, Y5, Y5; \
	VCVTDQ2PS    Y5, Y5; \
	VMULPS       Y9, Y5, Y5; \
	VADDPS       Y5, acc, acc

#define QCHUNK2(xoff0, xoff1, off, s0, s1) \
	VBROADCASTF128 xoff0(SI), Y4; \
	VBROADCASTF128 xoff1(SI), Y9; \
	QPAIR2(off(R10), off(R10)(BX*1), s0, s1, Y0); \
	QPAIR2(off(R10)(BX*2), off(R10)(R9*1), s0, s1, Y1); \
	QPAIR2(off(R11), off(R11)(BX*1), s0, s1, Y2); \
	QPAIR2(off(R11)(BX*2), off(R11)(R9*1), s0, s1, Y3)

// QSUPER2 is QSUPER when chunks 0,1 share the word at o0 and chunks 2,3 the one at o2.
#define QSUPER2(o0, o2, stride) \
	QCHUNK2(0, 16, o0, Y11, Y12); \
	QCHUNK2(32, 48, o2, Y13, Y14); \
	ADDQ $64, SI; \
	ADDQ $stride, R10; \
	ADDQ $stride, R11

#define QPROLOGUE \
	MOVQ    x+0(FP), SI; \
	MOVQ    p+8(FP), R10; \
	MOVQ    ldp+16(FP), BX; \
	MOVQ    groups+24(FP), CX; \
	MOVQ    supers+32(FP), AX; \
	MOVQ    sums+40(FP), R14; \
	MOVQ    sc+48(FP), R12; \
	MOVQ    bi+56(FP), R13; \
	MOVQ    tab+64(FP), DX; \
	LEAQ    (BX)(BX*2), R9; \
	LEAQ    (R10)(BX*4), R11; \
	VMOVDQU 0(DX), Y11; \
	VMOVDQU 32(DX), Y12; \
	VMOVDQU 64(DX), Y13; \
	VMOVDQU 96(DX), Y14; \
	VMOVDQU 128(DX), Y15; \
	VMOVDQU 160(DX), Y8; \
	VXORPS  Y7, Y7, Y7

#define QGROUPSTART \
	VXORPS Y0, Y0, Y0; \
	VXORPS Y1, Y1, Y1; \
	VXORPS Y2, Y2, Y2; \
	VXORPS Y3, Y3, Y3; \
	MOVQ   AX, R8

// QGROUPEND: the two VHADDPS rounds turn each half's [s0 s1 s2 s3] into
// (s0+s1)+(s2+s3), the eight rows ending in the order 0 2 4 6 | 1 3 5 7 (the gather
// indices follow it); then acc += float32(scale*dot) + float32(bias*sum).
#define QGROUPEND \
	VHADDPS      Y1, Y0, Y0; \
	VHADDPS      Y3, Y2, Y2; \
	VHADDPS      Y2, Y0, Y0; \
	VPCMPEQD     Y9, Y9, Y9; \
	VGATHERDPS   Y9, (R12)(Y8*4), Y5; \
	VPCMPEQD     Y10, Y10, Y10; \
	VGATHERDPS   Y10, (R13)(Y8*4), Y6; \
	VBROADCASTSS (R14), Y4; \
	VMULPS       Y0, Y5, Y5; \
	VMULPS       Y4, Y6, Y6; \
	VADDPS       Y6, Y5, Y5; \
	VADDPS       Y5, Y7, Y7; \
	ADDQ         $4, R12; \
	ADDQ         $4, R13; \
	ADDQ         $4, R14

// QSTORE8 puts the rows of an accumulator (ymm yacc, its xmm xacc) back in order
// 0..7 and stores them at DX.
#define QSTORE8(yacc, xacc) \
	VEXTRACTF128 $1, yacc, X5; \
	VUNPCKLPS    X5, xacc, X6; \
	VUNPCKHPS    X5, xacc, X5; \
	VMOVUPS      X6, (DX); \
	VMOVUPS      X5, 16(DX)

// The prefill path (qmm): an eight-row block is decoded once into float32 codes laid
// out in the order the dot loop reads them (per 16-code super-block, per chunk, per
// row pair: 8 floats, the low row's four codes then the high row's), then every x
// row is dotted with it by qdot8f, which does the same arithmetic in the same order
// as the qdot8bN kernels.

// QDPAIR decodes one chunk of two rows (words at a and b) to 8 floats at dst.
#define QDPAIR(a, b, s, dst) \
	VPBROADCASTD a, Y5; \
	VPBROADCASTD b, Y6; \
	VPBLENDD     $0xF0, Y6, Y5, Y5; \
	VPSRLVD      s, Y5, Y5; \
	VPAND        Y15, Y5, Y5; \
	VCVTDQ2PS    Y5, Y5; \
	VMOVUPS      Y5, dst

#define QDCHUNK(off, s, d) \
	QDPAIR(off(R10), off(R10)(BX*1), s, d(DI)); \
	QDPAIR(off(R10)(BX*2), off(R10)(R9*1), s, (d+32)(DI)); \
	QDPAIR(off(R11), off(R11)(BX*1), s, (d+64)(DI)); \
	QDPAIR(off(R11)(BX*2), off(R11)(R9*1), s, (d+96)(DI))

#define QDSUPER(o0, o1, o2, o3, stride) \
	QDCHUNK(o0, Y11, 0); \
	QDCHUNK(o1, Y12, 128); \
	QDCHUNK(o2, Y13, 256); \
	QDCHUNK(o3, Y14, 384); \
	ADDQ $512, DI; \
	ADDQ $stride, R10; \
	ADDQ $stride, R11

#define QDPROLOGUE \
	MOVQ    p+0(FP), R10; \
	MOVQ    ldp+8(FP), BX; \
	MOVQ    n+16(FP), CX; \
	MOVQ    tab+24(FP), DX; \
	MOVQ    dst+32(FP), DI; \
	LEAQ    (BX)(BX*2), R9; \
	LEAQ    (R10)(BX*4), R11; \
	VMOVDQU 0(DX), Y11; \
	VMOVDQU 32(DX), Y12; \
	VMOVDQU 64(DX), Y13; \
	VMOVDQU 96(DX), Y14; \
	VMOVDQU 128(DX), Y15


// QFCHUNK is QCHUNK on decoded codes: four row pairs' 8 floats at d(DI).
#define QFCHUNK(xoff, d) \
	VBROADCASTF128 xoff(SI), Y4; \
	VMULPS         d(DI), Y4, Y5; \
	VADDPS         Y5, Y0, Y0; \
	VMULPS         (d+32)(DI), Y4, Y6; \
	VADDPS         Y6, Y1, Y1; \
	VMULPS         (d+64)(DI), Y4, Y5; \
	VADDPS         Y5, Y2, Y2; \
	VMULPS         (d+96)(DI), Y4, Y6; \
	VADDPS         Y6, Y3, Y3

// QF2CHUNK is QFCHUNK for two x rows (SI and R10) at once: the decoded codes are loaded
// once, x row 0 accumulates in Y0-Y3, x row 1 in Y9-Y12.
#define QF2CHUNK(xoff, d) \
	VBROADCASTF128 xoff(SI), Y4; \
	VBROADCASTF128 xoff(R10), Y13; \
	VMOVUPS        d(DI), Y5; \
	VMULPS         Y4, Y5, Y6; \
	VADDPS         Y6, Y0, Y0; \
	VMULPS         Y13, Y5, Y5; \
	VADDPS         Y5, Y9, Y9; \
	VMOVUPS        (d+32)(DI), Y5; \
	VMULPS         Y4, Y5, Y6; \
	VADDPS         Y6, Y1, Y1; \
	VMULPS         Y13, Y5, Y5; \
	VADDPS         Y5, Y10, Y10; \
	VMOVUPS        (d+64)(DI), Y5; \
	VMULPS         Y4, Y5, Y6; \
	VADDPS         Y6, Y2, Y2; \
	VMULPS         Y13, Y5, Y5; \
	VADDPS         Y5, Y11, Y11; \
	VMOVUPS        (d+96)(DI), Y5; \
	VMULPS         Y4, Y5, Y6; \
	VADDPS         Y6, Y3, Y3; \
	VMULPS         Y13, Y5, Y5; \
	VADDPS         Y5, Y12, Y12

// QF2GROUPEND is QGROUPEND for both x rows (sums at R14 and R11, results in Y7 and
// Y14), gathering the shared scales and biases once.
#define QF2GROUPEND \
	VHADDPS      Y1, Y0, Y0; \
	VHADDPS      Y3, Y2, Y2; \
	VHADDPS      Y2, Y0, Y0; \
	VHADDPS      Y10, Y9, Y9; \
	VHADDPS      Y12, Y11, Y11; \
	VHADDPS      Y11, Y9, Y9; \
	VPCMPEQD     Y15, Y15, Y15; \
	VGATHERDPS   Y15, (R12)(Y8*4), Y5; \
	VPCMPEQD     Y13, Y13, Y13; \
	VGATHERDPS   Y13, (R13)(Y8*4), Y6; \
	VBROADCASTSS (R14), Y1; \
	VBROADCASTSS (R11), Y2; \
	VMULPS       Y0, Y5, Y3; \
	VMULPS       Y1, Y6, Y1; \
	VADDPS       Y1, Y3, Y3; \
	VADDPS       Y3, Y7, Y7; \
	VMULPS       Y9, Y5, Y5; \
	VMULPS       Y2, Y6, Y6; \
	VADDPS       Y6, Y5, Y5; \
	VADDPS       Y5, Y14, Y14; \
	ADDQ         $4, R12; \
	ADDQ         $4, R13; \
	ADDQ         $4, R14; \
	ADDQ         $4, R11

// func qdot8b2(x *float32, p *byte, ldp uintptr, groups, supers int, sums, sc, bi *float32, tab *qTab, out *float32)
TEXT ·qdot8b2(SB), NOSPLIT, $0-80
	QPROLOGUE
grp:
	QGROUPSTART
sb:
	QSUPER2(0, 0, 4)
	DECQ R8
	JNZ  sb
	QGROUPEND
	DECQ CX
	JNZ  grp
	MOVQ out+72(FP), DX
	QSTORE8(Y7, X7)
	VZEROUPPER
	RET

// func qdot8b3(x *float32, p *byte, ldp uintptr, groups, supers int, sums, sc, bi *float32, tab *qTab, out *float32)
TEXT ·qdot8b3(SB), NOSPLIT, $0-80
	QPROLOGUE
grp:
	QGROUPSTART
sb:
	QSUPER2(0, 2, 6)
	DECQ R8
	JNZ  sb
	QGROUPEND
	DECQ CX
	JNZ  grp
	MOVQ out+72(FP), DX
	QSTORE8(Y7, X7)
	VZEROUPPER
	RET

// func qdot8b4(x *float32, p *byte, ldp uintptr, groups, supers int, sums, sc, bi *float32, tab *qTab, out *float32)
TEXT ·qdot8b4(SB), NOSPLIT, $0-80
	QPROLOGUE
grp:
	QGROUPSTART
sb:
	QSUPER2(0, 4, 8)
	DECQ R8
	JNZ  sb
	QGROUPEND
	DECQ CX
	JNZ  grp
	MOVQ out+72(FP), DX
	QSTORE8(Y7, X7)
	VZEROUPPER
	RET

// func qdot8b5(x *float32, p *byte, ldp uintptr, groups, supers int, sums, sc, bi *float32, tab *qTab, out *float32)
TEXT ·qdot8b5(SB), NOSPLIT, $0-80
	QPROLOGUE
grp:
	QGROUPSTART
sb:
	QSUPER(0, 2, 5, 6, 10)
	DECQ R8
	JNZ  sb
	QGROUPEND
	DECQ CX
	JNZ  grp
	MOVQ out+72(FP), DX
	QSTORE8(Y7, X7)
	VZEROUPPER
	RET

// func qdot8b6(x *float32, p *byte, ldp uintptr, groups, supers int, sums, sc, bi *float32, tab *qTab, out *float32)
TEXT ·qdot8b6(SB), NOSPLIT, $0-80
	QPROLOGUE
grp:
	QGROUPSTART
sb:
	QSUPER(0, 3, 6, 8, 12)
	DECQ R8
	JNZ  sb
	QGROUPEND
	DECQ CX
	JNZ  grp
	MOVQ out+72(FP), DX
	QSTORE8(Y7, X7)
	VZEROUPPER
	RET

// func qdot8b8(x *float32, p *byte, ldp uintptr, groups, supers int, sums, sc, bi *float32, tab *qTab, out *float32)
TEXT ·qdot8b8(SB), NOSPLIT, $0-80
	QPROLOGUE
grp:
	QGROUPSTART
sb:
	QSUPER(0, 4, 8, 12, 16)
	DECQ R8
	JNZ  sb
	QGROUPEND
	DECQ CX
	JNZ  grp
	MOVQ out+72(FP), DX
	QSTORE8(Y7, X7)
	VZEROUPPER
	RET

// func qdec8b2(p *byte, ldp uintptr, n int, tab *qTab, dst *float32)
TEXT ·qdec8b2(SB), NOSPLIT, $0-40
	QDPROLOGUE
loop:
	QDSUPER(0, 0, 0, 0, 4)
	DECQ CX
	JNZ  loop
	VZEROUPPER
	RET

// func qdec8b3(p *byte, ldp uintptr, n int, tab *qTab, dst *float32)
TEXT ·qdec8b3(SB), NOSPLIT, $0-40
	QDPROLOGUE
loop:
	QDSUPER(0, 0, 2, 2, 6)
	DECQ CX
	JNZ  loop
	VZEROUPPER
	RET

// func qdec8b4(p *byte, ldp uintptr, n int, tab *qTab, dst *float32)
TEXT ·qdec8b4(SB), NOSPLIT, $0-40
	QDPROLOGUE
loop:
	QDSUPER(0, 0, 4, 4, 8)
	DECQ CX
	JNZ  loop
	VZEROUPPER
	RET

// func qdec8b5(p *byte, ldp uintptr, n int, tab *qTab, dst *float32)
TEXT ·qdec8b5(SB), NOSPLIT, $0-40
	QDPROLOGUE
loop:
	QDSUPER(0, 2, 5, 6, 10)
	DECQ CX
	JNZ  loop
	VZEROUPPER
	RET

// func qdec8b6(p *byte, ldp uintptr, n int, tab *qTab, dst *float32)
TEXT ·qdec8b6(SB), NOSPLIT, $0-40
	QDPROLOGUE
loop:
	QDSUPER(0, 3, 6, 8, 12)
	DECQ CX
	JNZ  loop
	VZEROUPPER
	RET

// func qdec8b8(p *byte, ldp uintptr, n int, tab *qTab, dst *float32)
TEXT ·qdec8b8(SB), NOSPLIT, $0-40
	QDPROLOGUE
loop:
	QDSUPER(0, 4, 8, 12, 16)
	DECQ CX
	JNZ  loop
	VZEROUPPER
	RET

// func qdot8f(x, d *float32, groups, supers int, sums, sc, bi *float32, tab *qTab, out *float32)
TEXT ·qdot8f(SB), NOSPLIT, $0-72
	MOVQ    x+0(FP), SI
	MOVQ    d+8(FP), DI
	MOVQ    groups+16(FP), CX
	MOVQ    supers+24(FP), AX
	MOVQ    sums+32(FP), R14
	MOVQ    sc+40(FP), R12
	MOVQ    bi+48(FP), R13
	MOVQ    tab+56(FP), DX
	VMOVDQU 160(DX), Y8
	VXORPS  Y7, Y7, Y7
grp:
	QGROUPSTART
sb:
	QFCHUNK(0, 0)
	QFCHUNK(16, 128)
	QFCHUNK(32, 256)
	QFCHUNK(48, 384)
	ADDQ $64, SI
	ADDQ $512, DI
	DECQ R8
	JNZ  sb
	QGROUPEND
	DECQ CX
	JNZ  grp
	MOVQ out+64(FP), DX
	QSTORE8(Y7, X7)
	VZEROUPPER
	RET

// func qdot8f2(x0, x1, d *float32, groups, supers int, sums0, sums1, sc, bi *float32, tab *qTab, out0, out1 *float32)
TEXT ·qdot8f2(SB), NOSPLIT, $0-96
	MOVQ    x0+0(FP), SI
	MOVQ    x1+8(FP), R10
	MOVQ    d+16(FP), DI
	MOVQ    groups+24(FP), CX
	MOVQ    supers+32(FP), AX
	MOVQ    sums0+40(FP), R14
	MOVQ    sums1+48(FP), R11
	MOVQ    sc+56(FP), R12
	MOVQ    bi+64(FP), R13
	MOVQ    tab+72(FP), DX
	VMOVDQU 160(DX), Y8
	VXORPS  Y7, Y7, Y7
	VXORPS  Y14, Y14, Y14
grp:
	QGROUPSTART
	VXORPS Y9, Y9, Y9
	VXORPS Y10, Y10, Y10
	VXORPS Y11, Y11, Y11
	VXORPS Y12, Y12, Y12
sb:
	QF2CHUNK(0, 0)
	QF2CHUNK(16, 128)
	QF2CHUNK(32, 256)
	QF2CHUNK(48, 384)
	ADDQ $64, SI
	ADDQ $64, R10
	ADDQ $512, DI
	DECQ R8
	JNZ  sb
	QF2GROUPEND
	DECQ CX
	JNZ  grp
	MOVQ out0+80(FP), DX
	QSTORE8(Y7, X7)
	MOVQ out1+88(FP), DX
	QSTORE8(Y14, X14)
	VZEROUPPER
	RET

// func f16ToF32F16C(dst *float32, src *uint16, n8 int)
TEXT ·f16ToF32F16C(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ n8+16(FP), CX
	TESTQ CX, CX
	JZ   done

loop:
	VCVTPH2PS (SI), Y0
	VMOVUPS   Y0, (DI)
	ADDQ      $16, SI
	ADDQ      $32, DI
	DECQ      CX
	JNZ       loop
	VZEROUPPER

done:
	RET
