#include "red16_amd64.h"

// QPFDIST is how far ahead of the codes each group loop prefetches (one line per 64
// bytes of codes it takes): the rows are one sequential stream, and in a decode step
// they come from DRAM; 4 KB ahead read the 0.8B 4-bit checkpoint's decode 10-15%
// faster than no prefetch, alternating in one run (8 and 16 KB were within noise of it).
#define QPFDIST 4096

// The 16-lane quantized row dots (quant16.go defines the order; rows16p in
// quant_simd.go calls them through qmv16). One call computes rows consecutive packed
// rows (back to back, so one pointer walks them all) dotted with x, permuted by
// qPermute16, and writes one float per row. One kernel per code width and group size
// (chunks of 32 codes per group); the scale dtype is a branch per row.
//
// Arguments: x, p (codes), rows, groups, dt (0 float32, 1 bfloat16, 2 float16 scales),
// sums (x's group sums, zero-padded to a multiple of 16), sc and bi (the rows' first
// scale and bias), scr (a float32 scratch of groups rounded up to 16), out, sstride
// (bytes of one row's scales), blocks (groups/16) and mask (the groups%16 tail lanes).
//
// Registers: SI x, R15 the codes, CX rows left, DX groups, AX blocks, R8 sums, R9 /
// R10 the scales / biases, R11 out, BX scr, DI dt; R12, R13, R14 walk x or sums, scr
// and groups within a row (two groups a step). Z0 and Z10 hold the row's 16 lane
// accumulators of even and odd groups, Z1 its bias lanes, Z4 a group's partial lanes; Z31 the floats 0..15, which VPERMPS indexes with
// a code's low four bits (a 4-bit code to float32 in one instruction, the high nibble
// after one shift). K1 masks the tail block of scales and biases.

// Q4FIRST: the first 32-code chunk of a 4-bit group (codes at co, x at xo): p =
// xa*qa, then p = fma(xb, qb, p). Q4NEXT: a later chunk: p = fma(xa, qa, p), then
// p = fma(xb, qb, p).
#define Q4FIRST(co, xo) \
	VPMOVZXBD co(R15), Z2; \
	VPSRLD    $4, Z2, Z3; \
	VPERMPS   Z31, Z2, Z2; \
	VPERMPS   Z31, Z3, Z3; \
	VMULPS    xo(R12), Z2, Z4; \
	VFMADD231PS (xo+64)(R12), Z3, Z4

#define Q4NEXT(co, xo) \
	VPMOVZXBD co(R15), Z2; \
	VPSRLD    $4, Z2, Z3; \
	VPERMPS   Z31, Z2, Z2; \
	VPERMPS   Z31, Z3, Z3; \
	VFMADD231PS xo(R12), Z2, Z4; \
	VFMADD231PS (xo+64)(R12), Z3, Z4

// Q8FIRST and Q8NEXT are the same for 8-bit codes (bytes l and 16+l of the chunk).
#define Q8FIRST(co, xo) \
	VPMOVZXBD co(R15), Z2; \
	VPMOVZXBD (co+16)(R15), Z3; \
	VCVTDQ2PS Z2, Z2; \
	VCVTDQ2PS Z3, Z3; \
	VMULPS    xo(R12), Z2, Z4; \
	VFMADD231PS (xo+64)(R12), Z3, Z4

#define Q8NEXT(co, xo) \
	VPMOVZXBD co(R15), Z2; \
	VPMOVZXBD (co+16)(R15), Z3; \
	VCVTDQ2PS Z2, Z2; \
	VCVTDQ2PS Z3, Z3; \
	VFMADD231PS xo(R12), Z2, Z4; \
	VFMADD231PS (xo+64)(R12), Z3, Z4

// BLOCKEND stores 16 widened scales (Z8) to scr and adds the 16 groups' bias
// products (biases Z9 times the sums, fused) to the bias lanes.
#define BLOCKEND \
	VMOVUPS Z8, (R13); \
	VFMADD231PS (R12), Z9, Z1; \
	ADDQ    $64, R13; \
	ADDQ    $64, R12; \
	ADDQ    $16, R14

// QSETUP is every 16-lane kernel's head: the arguments to registers, then per row the
// accumulators cleared, the row's scales widened to scr and its bias lanes summed
// (BLOCKEND per 16 groups, one branch per scale dtype), up to the group loop. Each
// kernel follows it with its own group loop (labels grp and gtail, over its chunks per
// group) and ends with QFINISH.
#define QSETUP \
	MOVQ x+0(FP), SI; \
	MOVQ p+8(FP), R15; \
	MOVQ rows+16(FP), CX; \
	MOVQ groups+24(FP), DX; \
	MOVQ dt+32(FP), DI; \
	MOVQ sums+40(FP), R8; \
	MOVQ sc+48(FP), R9; \
	MOVQ bi+56(FP), R10; \
	MOVQ scr+64(FP), BX; \
	MOVQ out+72(FP), R11; \
	MOVQ blocks+88(FP), AX; \
	KMOVW mask+96(FP), K1; \
	VMOVUPS ·qIota16(SB), Z31; \
row: \
	VPXORD Z0, Z0, Z0; \
	VPXORD Z1, Z1, Z1; \
	MOVQ   BX, R13; \
	MOVQ   R8, R12; \
	XORQ   R14, R14; \
	CMPQ   DI, $1; \
	JEQ    bf16; \
	JGT    f16; \
	TESTQ AX, AX; \
	JZ    f32tail; \
f32blk: \
	VMOVUPS (R9)(R14*4), Z8; \
	VMOVUPS (R10)(R14*4), Z9; \
	BLOCKEND; \
	MOVQ  AX, DX; \
	SHLQ  $4, DX; \
	CMPQ  R14, DX; \
	JLT   f32blk; \
f32tail: \
	KORTESTW K1, K1; \
	JZ       main; \
	VMOVUPS.Z (R9)(R14*4), K1, Z8; \
	VMOVUPS.Z (R10)(R14*4), K1, Z9; \
	BLOCKEND; \
	JMP main; \
bf16: \
	TESTQ AX, AX; \
	JZ    bf16tail; \
bf16blk: \
	VPMOVZXWD (R9)(R14*2), Z8; \
	VPSLLD $16, Z8, Z8; \
	VPMOVZXWD (R10)(R14*2), Z9; \
	VPSLLD $16, Z9, Z9; \
	BLOCKEND; \
	MOVQ  AX, DX; \
	SHLQ  $4, DX; \
	CMPQ  R14, DX; \
	JLT   bf16blk; \
bf16tail: \
	KORTESTW K1, K1; \
	JZ       main; \
	VPMOVZXWD.Z (R9)(R14*2), K1, Z8; \
	VPSLLD $16, Z8, Z8; \
	VPMOVZXWD.Z (R10)(R14*2), K1, Z9; \
	VPSLLD $16, Z9, Z9; \
	BLOCKEND; \
	JMP main; \
f16: \
	TESTQ AX, AX; \
	JZ    f16tail; \
f16blk: \
	VCVTPH2PS (R9)(R14*2), Z8; \
	VCVTPH2PS (R10)(R14*2), Z9; \
	BLOCKEND; \
	MOVQ  AX, DX; \
	SHLQ  $4, DX; \
	CMPQ  R14, DX; \
	JLT   f16blk; \
f16tail: \
	KORTESTW K1, K1; \
	JZ       main; \
	VCVTPH2PS.Z (R9)(R14*2), K1, Z8; \
	VCVTPH2PS.Z (R10)(R14*2), K1, Z9; \
	BLOCKEND; \
	JMP main; \
main: \
	MOVQ groups+24(FP), DX; \
	MOVQ SI, R12; \
	MOVQ BX, R13; \
	VPXORD Z10, Z10, Z10; \
	MOVQ DX, R14; \
	SHRQ $1, R14; \
	JZ   gtail

// QFINISH ends a row and the kernel: lanes (even + odd groups) + bias lanes, reduce16
// (lanes l+8, l+4, l+2, l+1 onto l), the row's value stored, the next row's scales.
#define QFINISH \
gend: \
	VADDPS Z10, Z0, Z0; \
	VADDPS Z1, Z0, Z0; \
	RED16(Z0, Y0, X0); \
	VMOVSS X0, (R11); \
	ADDQ $4, R11; \
	ADDQ sstride+80(FP), R9; \
	ADDQ sstride+80(FP), R10; \
	DECQ CX; \
	JNZ row; \
	VZEROUPPER; \
	RET
