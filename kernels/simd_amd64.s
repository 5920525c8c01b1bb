#include "textflag.h"

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

// func gemv8AVX(x, w *float32, ldw uintptr, out *float32, blocks, k4 int)
//
// Eight rows per block, two per ymm accumulator: the low 128-bit half holds one row's
// four lanes s0..s3 (lane j takes k = j mod 4), the high half the next row's. Each step
// multiplies four k of every row by x (VMULPS) and adds (VADDPS): no FMA, so every
// lane rounds exactly as mmDot's s_j += x*w. The end sums (s0+s1)+(s2+s3) per half.
TEXT ·gemv8AVX(SB), NOSPLIT, $0-48
	MOVQ x+0(FP), SI
	MOVQ w+8(FP), DI
	MOVQ ldw+16(FP), BX
	MOVQ out+24(FP), DX
	MOVQ blocks+32(FP), CX
	MOVQ k4+40(FP), R8
	LEAQ (BX)(BX*2), R9 // 3 rows

block:
	MOVQ   DI, R10          // rows 0-3
	LEAQ   (DI)(BX*4), R11  // rows 4-7
	MOVQ   SI, R12
	MOVQ   R8, R13
	VXORPS Y0, Y0, Y0
	VXORPS Y1, Y1, Y1
	VXORPS Y2, Y2, Y2
	VXORPS Y3, Y3, Y3

kloop:
	VBROADCASTF128 (R12), Y4
	VMOVUPS        (R10), X5
	VINSERTF128    $1, (R10)(BX*1), Y5, Y5
	VMULPS         Y4, Y5, Y5
	VADDPS         Y5, Y0, Y0
	VMOVUPS        (R10)(BX*2), X6
	VINSERTF128    $1, (R10)(R9*1), Y6, Y6
	VMULPS         Y4, Y6, Y6
	VADDPS         Y6, Y1, Y1
	VMOVUPS        (R11), X7
	VINSERTF128    $1, (R11)(BX*1), Y7, Y7
	VMULPS         Y4, Y7, Y7
	VADDPS         Y7, Y2, Y2
	VMOVUPS        (R11)(BX*2), X8
	VINSERTF128    $1, (R11)(R9*1), Y8, Y8
	VMULPS         Y4, Y8, Y8
	VADDPS         Y8, Y3, Y3
	ADDQ           $16, R10
	ADDQ           $16, R11
	ADDQ           $16, R12
	DECQ           R13
	JNZ            kloop

	// Per half: [s0 s1 s2 s3] + [s1 s0 s3 s2], then + its [2 3 0 1] permutation:
	// element 0 becomes (s0+s1)+(s2+s3) (IEEE addition is commutative, bit for bit).
	VPERMILPS $0xB1, Y0, Y4
	VADDPS    Y4, Y0, Y0
	VPERMILPS $0x4E, Y0, Y4
	VADDPS    Y4, Y0, Y0
	VPERMILPS $0xB1, Y1, Y5
	VADDPS    Y5, Y1, Y1
	VPERMILPS $0x4E, Y1, Y5
	VADDPS    Y5, Y1, Y1
	VPERMILPS $0xB1, Y2, Y6
	VADDPS    Y6, Y2, Y2
	VPERMILPS $0x4E, Y2, Y6
	VADDPS    Y6, Y2, Y2
	VPERMILPS $0xB1, Y3, Y7
	VADDPS    Y7, Y3, Y3
	VPERMILPS $0x4E, Y3, Y7
	VADDPS    Y7, Y3, Y3

	VMOVSS       X0, (DX)
	VEXTRACTF128 $1, Y0, X4
	VMOVSS       X4, 4(DX)
	VMOVSS       X1, 8(DX)
	VEXTRACTF128 $1, Y1, X5
	VMOVSS       X5, 12(DX)
	VMOVSS       X2, 16(DX)
	VEXTRACTF128 $1, Y2, X6
	VMOVSS       X6, 20(DX)
	VMOVSS       X3, 24(DX)
	VEXTRACTF128 $1, Y3, X7
	VMOVSS       X7, 28(DX)

	ADDQ $32, DX
	LEAQ (DI)(BX*8), DI
	DECQ CX
	JNZ  block
	VZEROUPPER
	RET

// func axpyRowsAVX(y, a, v *float32, ldv uintptr, n, cols8 int)
//
// y[c] += a[j] * v[j][c] for j = 0..n-1 in order, c over 32 columns (cols8 4), 16
// (cols8 2) or 8 (cols8 1), y held in registers; a multiply then an add, as axpy32
// rounds.
TEXT ·axpyRowsAVX(SB), NOSPLIT, $0-48
	MOVQ y+0(FP), DI
	MOVQ a+8(FP), SI
	MOVQ v+16(FP), BX
	MOVQ ldv+24(FP), DX
	MOVQ n+32(FP), CX
	MOVQ cols8+40(FP), R8
	CMPQ R8, $2
	JEQ  mid
	CMPQ R8, $4
	JNE  narrow

	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	VMOVUPS 64(DI), Y2
	VMOVUPS 96(DI), Y3
	TESTQ   CX, CX
	JZ      widedone

wideloop:
	MOVL         (SI), AX
	ANDL         $0x7fffffff, AX
	JZ           widenext     // a zero weight (a masked key) adds nothing
	VBROADCASTSS (SI), Y4
	VMULPS       (BX), Y4, Y5
	VADDPS       Y5, Y0, Y0
	VMULPS       32(BX), Y4, Y6
	VADDPS       Y6, Y1, Y1
	VMULPS       64(BX), Y4, Y7
	VADDPS       Y7, Y2, Y2
	VMULPS       96(BX), Y4, Y8
	VADDPS       Y8, Y3, Y3

widenext:
	ADDQ $4, SI
	ADDQ DX, BX
	DECQ CX
	JNZ  wideloop

widedone:
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VMOVUPS Y2, 64(DI)
	VMOVUPS Y3, 96(DI)
	VZEROUPPER
	RET

mid:
	VMOVUPS (DI), Y0
	VMOVUPS 32(DI), Y1
	TESTQ   CX, CX
	JZ      middone

midloop:
	MOVL         (SI), AX
	ANDL         $0x7fffffff, AX
	JZ           midnext
	VBROADCASTSS (SI), Y4
	VMULPS       (BX), Y4, Y5
	VADDPS       Y5, Y0, Y0
	VMULPS       32(BX), Y4, Y6
	VADDPS       Y6, Y1, Y1

midnext:
	ADDQ $4, SI
	ADDQ DX, BX
	DECQ CX
	JNZ  midloop

middone:
	VMOVUPS Y0, (DI)
	VMOVUPS Y1, 32(DI)
	VZEROUPPER
	RET

narrow:
	VMOVUPS (DI), Y0
	TESTQ   CX, CX
	JZ      narrowdone

narrowloop:
	MOVL         (SI), AX
	ANDL         $0x7fffffff, AX
	JZ           narrownext
	VBROADCASTSS (SI), Y4
	VMULPS       (BX), Y4, Y5
	VADDPS       Y5, Y0, Y0

narrownext:
	ADDQ $4, SI
	ADDQ DX, BX
	DECQ CX
	JNZ  narrowloop

narrowdone:
	VMOVUPS Y0, (DI)
	VZEROUPPER
	RET

// The constants of exp32 (elementwise_exp.go), same bits.
DATA expc<>+0(SB)/4, $0xc2aeac50  // lo
DATA expc<>+4(SB)/4, $0x42b0c0a5  // hi
DATA expc<>+8(SB)/4, $0x3fb8aa3b  // log2 e
DATA expc<>+12(SB)/4, $0x4b400000 // magic
DATA expc<>+16(SB)/4, $0x3f318000 // ln2 hi
DATA expc<>+20(SB)/4, $0xb95e8083 // ln2 lo
DATA expc<>+24(SB)/4, $0x39506967 // P[0..5]
DATA expc<>+28(SB)/4, $0x3ab743ce
DATA expc<>+32(SB)/4, $0x3c088908
DATA expc<>+36(SB)/4, $0x3d2aa9c1
DATA expc<>+40(SB)/4, $0x3e2aaaaa
DATA expc<>+44(SB)/4, $0x3f000000
DATA expc<>+48(SB)/4, $0x3f800000 // 1
DATA expc<>+52(SB)/4, $0x7f800000 // +Inf
DATA expc<>+56(SB)/4, $127
GLOBL expc<>(SB), RODATA|NOPTR, $60

// func expAVX2(dst, src *float32, a, b float32, n8 int)
//
// exp32 eight at a time: the same operations in the same order on the input clamped to
// [lo, hi], then +Inf above hi, 0 below lo, the input where it is NaN.
TEXT ·expAVX2(SB), NOSPLIT, $0-32
	MOVQ         dst+0(FP), DI
	MOVQ         src+8(FP), SI
	VBROADCASTSS a+16(FP), Y12
	VBROADCASTSS b+20(FP), Y13
	MOVQ         n8+24(FP), CX
	VBROADCASTSS expc<>+0(SB), Y8   // lo
	VBROADCASTSS expc<>+4(SB), Y9   // hi
	VBROADCASTSS expc<>+8(SB), Y10  // log2 e
	VBROADCASTSS expc<>+12(SB), Y11 // magic
	VBROADCASTSS expc<>+48(SB), Y14 // 1
	VPBROADCASTD expc<>+56(SB), Y15 // 127

loop:
	VMOVUPS      (SI), Y0
	VMULPS       Y12, Y0, Y0 // a*x, exact
	VSUBPS       Y13, Y0, Y0 // x = a*src - b
	VMAXPS       Y8, Y0, Y1
	VMINPS       Y9, Y1, Y1  // clamped x
	VMULPS       Y10, Y1, Y2
	VADDPS       Y11, Y2, Y3 // tm
	VSUBPS       Y11, Y3, Y2 // kf
	VBROADCASTSS expc<>+16(SB), Y4
	VMULPS       Y2, Y4, Y4
	VSUBPS       Y4, Y1, Y4  // r = x - kf*ln2hi
	VBROADCASTSS expc<>+20(SB), Y5
	VMULPS       Y2, Y5, Y5
	VSUBPS       Y5, Y4, Y4  // r -= kf*ln2lo
	VMULPS       Y4, Y4, Y5  // z
	VBROADCASTSS expc<>+24(SB), Y6
	VMULPS       Y4, Y6, Y6
	VBROADCASTSS expc<>+28(SB), Y7
	VADDPS       Y7, Y6, Y6
	VMULPS       Y4, Y6, Y6
	VBROADCASTSS expc<>+32(SB), Y7
	VADDPS       Y7, Y6, Y6
	VMULPS       Y4, Y6, Y6
	VBROADCASTSS expc<>+36(SB), Y7
	VADDPS       Y7, Y6, Y6
	VMULPS       Y4, Y6, Y6
	VBROADCASTSS expc<>+40(SB), Y7
	VADDPS       Y7, Y6, Y6
	VMULPS       Y4, Y6, Y6
	VBROADCASTSS expc<>+44(SB), Y7
	VADDPS       Y7, Y6, Y6  // p
	VMULPS       Y5, Y6, Y6
	VADDPS       Y4, Y6, Y6
	VADDPS       Y14, Y6, Y6 // y = p*z + r + 1
	VPADDD       Y15, Y3, Y3
	VPSLLD       $23, Y3, Y3 // 2^k
	VMULPS       Y3, Y6, Y6
	VCMPPS       $0x1e, Y9, Y0, Y7 // x > hi
	VBROADCASTSS expc<>+52(SB), Y5
	VBLENDVPS    Y7, Y5, Y6, Y6
	VCMPPS       $0x11, Y8, Y0, Y7 // x < lo
	VANDNPS      Y6, Y7, Y6
	VCMPPS       $0x03, Y0, Y0, Y7 // NaN
	VBLENDVPS    Y7, Y0, Y6, Y6
	VMOVUPS      Y6, (DI)
	ADDQ         $32, SI
	ADDQ         $32, DI
	DECQ         CX
	JNZ          loop
	VZEROUPPER
	RET

// ROWDOT16(lo, hi) leaves in X4's lane 0 the dot of the row in Y0:Y1 with the vector
// in lo:hi, in gdStep16's order (see gdStep16AVX); it uses Y2, Y3 and X5.
#define ROWDOT16(lo, hi) \
	VMULPS       lo, Y0, Y2; \
	VMULPS       hi, Y1, Y3; \
	VEXTRACTF128 $1, Y2, X4; \
	VADDPS       X4, X2, X4; \
	VADDPS       X3, X4, X4; \
	VEXTRACTF128 $1, Y3, X5; \
	VADDPS       X5, X4, X4; \
	VPERMILPS    $0xB1, X4, X5; \
	VADDPS       X5, X4, X4; \
	VPERMILPS    $0x4E, X4, X5; \
	VADDPS       X5, X4, X4

// func gdStep16AVX(s, k, q, v, y *float32, n int, decay, beta float32)
//
// gdStep16's arithmetic, 16 state columns in two ymm registers (a row per iteration): a
// rounded multiply then a rounded add, no FMA. A row dot product is
// ((p0..3 + p4..7) + p8..11) + p12..15 lane by lane, which is gdStep16's
// s_j = ((r_j k_j + r_j+4 k_j+4) + r_j+8 k_j+8) + r_j+12 k_j+12, then (s0+s1)+(s2+s3).
TEXT ·gdStep16AVX(SB), NOSPLIT, $0-56
	MOVQ         s+0(FP), DI
	MOVQ         k+8(FP), SI
	MOVQ         q+16(FP), DX
	MOVQ         v+24(FP), R8
	MOVQ         y+32(FP), R9
	MOVQ         n+40(FP), CX
	VBROADCASTSS decay+48(FP), Y10
	VBROADCASTSS beta+52(FP), X11
	VMOVUPS      (SI), Y12         // k[0:8]
	VMOVUPS      32(SI), Y13       // k[8:16]
	VMOVUPS      (DX), Y14         // q[0:8]
	VMOVUPS      32(DX), Y15       // q[8:16]
	TESTQ        CX, CX
	JLE          gddone

gdrow:
	VMULPS (DI), Y10, Y0   // r = s * decay
	VMULPS 32(DI), Y10, Y1

	ROWDOT16(Y12, Y13) // t = row . k

	// d = (v - t) * beta, broadcast; r += d * k
	VMOVSS      (R8), X6
	VSUBSS      X4, X6, X6
	VMULSS      X11, X6, X6
	VSHUFPS     $0, X6, X6, X6
	VINSERTF128 $1, X6, Y6, Y6
	VMULPS      Y12, Y6, Y7
	VADDPS      Y7, Y0, Y0
	VMULPS      Y13, Y6, Y7
	VADDPS      Y7, Y1, Y1
	VMOVUPS     Y0, (DI)
	VMOVUPS     Y1, 32(DI)

	ROWDOT16(Y14, Y15) // y = row . q
	VMOVSS       X4, (R9)

	ADDQ $64, DI
	ADDQ $4, R8
	ADDQ $4, R9
	DECQ CX
	JNZ  gdrow

gddone:
	VZEROUPPER
	RET

// func binF32AVX(op int, dst, a, b *float32, n8 int)
//
// dst[i] = a[i] op b[i] for n8*8 elements, op 0 add, 1 sub, 2 mul, 3 div: one rounded
// IEEE operation per element, as the Go loops. dst may be a or b (each element is read
// before it is written).
TEXT ·binF32AVX(SB), NOSPLIT, $0-40
	MOVQ op+0(FP), AX
	MOVQ dst+8(FP), DI
	MOVQ a+16(FP), SI
	MOVQ b+24(FP), DX
	MOVQ n8+32(FP), CX
	TESTQ CX, CX
	JLE   bindone
	CMPQ  AX, $1
	JEQ   binsub
	CMPQ  AX, $2
	JEQ   binmul
	CMPQ  AX, $3
	JEQ   bindiv

binadd:
	VMOVUPS (SI), Y0
	VADDPS  (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	DECQ    CX
	JNZ     binadd
	JMP     bindone

binsub:
	VMOVUPS (SI), Y0
	VSUBPS  (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	DECQ    CX
	JNZ     binsub
	JMP     bindone

binmul:
	VMOVUPS (SI), Y0
	VMULPS  (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	DECQ    CX
	JNZ     binmul
	JMP     bindone

bindiv:
	VMOVUPS (SI), Y0
	VDIVPS  (DX), Y0, Y0
	VMOVUPS Y0, (DI)
	ADDQ    $32, SI
	ADDQ    $32, DX
	ADDQ    $32, DI
	DECQ    CX
	JNZ     bindiv

bindone:
	VZEROUPPER
	RET

// func prefetchLines(p *float32, n int)
// PREFETCHT1 on every cache line that holds one of the n floats from p.
TEXT ·prefetchLines(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	TESTQ CX, CX
	JLE pfdone
	LEAQ (SI)(CX*4), DX // end
	ANDQ $-64, SI       // the first line
pfloop:
	PREFETCHT1 (SI)
	ADDQ $64, SI
	CMPQ SI, DX
	JB pfloop
pfdone:
	RET

// HSUM4 leaves (x0+x1)+(x2+x3) of X in its lane 0 (gdDecayDot's and gdUpdateDot's
// final sum; the adds are commutative, so the lanes' order inside each is immaterial).
#define HSUM4(X, T) \
	VPERMILPS $0xB1, X, T; \
	VADDPS    T, X, X; \
	VPERMILPS $0x4E, X, T; \
	VADDPS    T, X, X

// DELTA4 turns the row dot t (lane 0 of X) into delta = (v - t) * beta, broadcast to
// every lane of X (v at off(R9), beta in X15; T a temporary).
#define DELTA4(X, T, off) \
	VMOVSS  off(R9), T; \
	VSUBSS  X, T, T; \
	VMULSS  X15, T, T; \
	VSHUFPS $0, T, T, X

// GDDELTAS turns a four-row block's row dots (X0-X3) into their deltas, each
// broadcast to its register's lanes.
#define GDDELTAS \
	HSUM4(X0, X4); \
	HSUM4(X1, X5); \
	HSUM4(X2, X6); \
	HSUM4(X3, X7); \
	DELTA4(X0, X4, 0); \
	DELTA4(X1, X5, 4); \
	DELTA4(X2, X6, 8); \
	DELTA4(X3, X7, 12)

// GDDK puts delta times the four k lanes (X9) of each of a block's four rows in
// X4-X7 (the deltas in X0-X3).
#define GDDK \
	VMULPS X9, X0, X4; \
	VMULPS X9, X1, X5; \
	VMULPS X9, X2, X6; \
	VMULPS X9, X3, X7

// GDYACC adds the four updated rows' lanes (X4-X7) times q's (X14) to the y lanes
// (X10-X13).
#define GDYACC \
	VMULPS X14, X4, X4; \
	VMULPS X14, X5, X5; \
	VMULPS X14, X6, X6; \
	VMULPS X14, X7, X7; \
	VADDPS X4, X10, X10; \
	VADDPS X5, X11, X11; \
	VADDPS X6, X12, X12; \
	VADDPS X7, X13, X13

// GDYS sums a four-row block's y lanes (X10-X13) and stores y[0..3] at R10.
#define GDYS \
	HSUM4(X10, X4); \
	HSUM4(X11, X5); \
	HSUM4(X12, X6); \
	HSUM4(X13, X7); \
	VMOVSS X10, (R10); \
	VMOVSS X11, 4(R10); \
	VMOVSS X12, 8(R10); \
	VMOVSS X13, 12(R10)

// func gdRowsAVX(s, src, k, q, v, y *float32, n, dk4 int, decay, beta float32)
//
// gdDecayDot then gdUpdateDot per state row, four rows at a time (one tail row at a
// time): each row's four partial sums s0..s3 are the four lanes of an xmm register
// (lane j takes columns j mod 4, in order), a rounded multiply then a rounded add,
// no FMA, so every value rounds as the Go loops'. Registers: DI s, SI src, DX k, R8 q,
// R9 v, R10 y, CX rows left, R11 the row stride in bytes, BX the column counter, AX /
// R12 walk k and q, R12-R15 the rows (rows 2 and 3 at twice the stride).
TEXT ·gdRowsAVX(SB), NOSPLIT, $0-72
	MOVQ         s+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         k+16(FP), DX
	MOVQ         q+24(FP), R8
	MOVQ         v+32(FP), R9
	MOVQ         y+40(FP), R10
	MOVQ         n+48(FP), CX
	MOVQ         dk4+56(FP), R11
	SHLQ         $4, R11
	VBROADCASTSS decay+64(FP), X8
	VBROADCASTSS beta+68(FP), X15

gdquad:
	CMPQ CX, $4
	JLT  gdone
	// pass 1: r = src * decay, stored; t += r * k
	VXORPS X0, X0, X0
	VXORPS X1, X1, X1
	VXORPS X2, X2, X2
	VXORPS X3, X3, X3
	MOVQ   SI, R12
	LEAQ   (SI)(R11*1), R13
	MOVQ   DI, R14
	LEAQ   (DI)(R11*1), R15
	MOVQ   DX, AX
	MOVQ   dk4+56(FP), BX

gdq1:
	VMOVUPS (AX), X9
	VMULPS  (R12), X8, X4
	VMULPS  (R13), X8, X5
	VMULPS  (R12)(R11*2), X8, X6
	VMULPS  (R13)(R11*2), X8, X7
	VMOVUPS X4, (R14)
	VMOVUPS X5, (R15)
	VMOVUPS X6, (R14)(R11*2)
	VMOVUPS X7, (R15)(R11*2)
	VMULPS  X9, X4, X4
	VMULPS  X9, X5, X5
	VMULPS  X9, X6, X6
	VMULPS  X9, X7, X7
	VADDPS  X4, X0, X0
	VADDPS  X5, X1, X1
	VADDPS  X6, X2, X2
	VADDPS  X7, X3, X3
	ADDQ    $16, AX
	ADDQ    $16, R12
	ADDQ    $16, R13
	ADDQ    $16, R14
	ADDQ    $16, R15
	DECQ    BX
	JNZ     gdq1

	GDDELTAS

	// pass 2: r += delta * k, stored; y += r * q
	VXORPS X10, X10, X10
	VXORPS X11, X11, X11
	VXORPS X12, X12, X12
	VXORPS X13, X13, X13
	MOVQ   R8, R12
	MOVQ   DI, R14
	LEAQ   (DI)(R11*1), R15
	MOVQ   DX, AX
	MOVQ   dk4+56(FP), BX

gdq2:
	VMOVUPS (AX), X9
	VMOVUPS (R12), X14
	GDDK
	VADDPS  (R14), X4, X4
	VADDPS  (R15), X5, X5
	VADDPS  (R14)(R11*2), X6, X6
	VADDPS  (R15)(R11*2), X7, X7
	VMOVUPS X4, (R14)
	VMOVUPS X5, (R15)
	VMOVUPS X6, (R14)(R11*2)
	VMOVUPS X7, (R15)(R11*2)
	GDYACC
	ADDQ    $16, AX
	ADDQ    $16, R12
	ADDQ    $16, R14
	ADDQ    $16, R15
	DECQ    BX
	JNZ     gdq2

	GDYS

	LEAQ (SI)(R11*4), SI
	LEAQ (DI)(R11*4), DI
	ADDQ $16, R9
	ADDQ $16, R10
	SUBQ $4, CX
	JMP  gdquad

gdone:
	TESTQ CX, CX
	JZ    gdend
	VXORPS X0, X0, X0
	MOVQ   SI, R12
	MOVQ   DI, R14
	MOVQ   DX, AX
	MOVQ   dk4+56(FP), BX

gdo1:
	VMOVUPS (AX), X9
	VMULPS  (R12), X8, X4
	VMOVUPS X4, (R14)
	VMULPS  X9, X4, X4
	VADDPS  X4, X0, X0
	ADDQ    $16, AX
	ADDQ    $16, R12
	ADDQ    $16, R14
	DECQ    BX
	JNZ     gdo1

	HSUM4(X0, X4)
	DELTA4(X0, X4, 0)
	VXORPS X10, X10, X10
	MOVQ   R8, R12
	MOVQ   DI, R14
	MOVQ   DX, AX
	MOVQ   dk4+56(FP), BX

gdo2:
	VMOVUPS (AX), X9
	VMULPS  X9, X0, X4
	VADDPS  (R14), X4, X4
	VMOVUPS X4, (R14)
	VMULPS  (R12), X4, X4
	VADDPS  X4, X10, X10
	ADDQ    $16, AX
	ADDQ    $16, R12
	ADDQ    $16, R14
	DECQ    BX
	JNZ     gdo2

	HSUM4(X10, X4)
	VMOVSS X10, (R10)
	ADDQ   R11, SI
	ADDQ   R11, DI
	ADDQ   $4, R9
	ADDQ   $4, R10
	DECQ   CX
	JMP    gdone

gdend:
	RET

// func gdRowsNT(s, src, k, q, v, y, tmp *float32, quads, dk4 int, decay, beta float32)
//
// gdRowsAVX's four-row step over quads*4 rows, with the same rounding, for a decode
// step's new state: pass 1 keeps the decayed rows in tmp (4*4*dk4 floats, in L1,
// the four rows interleaved by column quad) instead of s, and pass 2 streams the
// updated rows to s with non-temporal stores, so s is written without first being
// read (a state is read again only a whole model later, from memory either way).
// s must be 16-byte aligned and must not overlap src. Registers as in gdRowsAVX,
// R14 walking tmp in pass 1, R13 in pass 2.
TEXT ·gdRowsNT(SB), NOSPLIT, $0-80
	MOVQ         s+0(FP), DI
	MOVQ         src+8(FP), SI
	MOVQ         k+16(FP), DX
	MOVQ         q+24(FP), R8
	MOVQ         v+32(FP), R9
	MOVQ         y+40(FP), R10
	MOVQ         quads+56(FP), CX
	MOVQ         dk4+64(FP), R11
	SHLQ         $4, R11
	VBROADCASTSS decay+72(FP), X8
	VBROADCASTSS beta+76(FP), X15

ntquad:
	// pass 1: r = src * decay, kept in tmp; t += r * k
	VXORPS X0, X0, X0
	VXORPS X1, X1, X1
	VXORPS X2, X2, X2
	VXORPS X3, X3, X3
	MOVQ   SI, R12
	LEAQ   (SI)(R11*1), R13
	MOVQ   tmp+48(FP), R14
	LEAQ   (SI)(R11*4), R15
	MOVQ   DX, AX
	MOVQ   dk4+64(FP), BX

ntq1:
	PREFETCHT0 (R15) // the next quad's rows, a line an iteration
	ADDQ    $64, R15
	VMOVUPS (AX), X9
	VMULPS  (R12), X8, X4
	VMULPS  (R13), X8, X5
	VMULPS  (R12)(R11*2), X8, X6
	VMULPS  (R13)(R11*2), X8, X7
	VMOVUPS X4, (R14)
	VMOVUPS X5, 16(R14)
	VMOVUPS X6, 32(R14)
	VMOVUPS X7, 48(R14)
	VMULPS  X9, X4, X4
	VMULPS  X9, X5, X5
	VMULPS  X9, X6, X6
	VMULPS  X9, X7, X7
	VADDPS  X4, X0, X0
	VADDPS  X5, X1, X1
	VADDPS  X6, X2, X2
	VADDPS  X7, X3, X3
	ADDQ    $16, AX
	ADDQ    $16, R12
	ADDQ    $16, R13
	ADDQ    $64, R14
	DECQ    BX
	JNZ     ntq1

	GDDELTAS

	// pass 2: r += delta * k, streamed to s; y += r * q
	VXORPS X10, X10, X10
	VXORPS X11, X11, X11
	VXORPS X12, X12, X12
	VXORPS X13, X13, X13
	MOVQ   R8, R12
	MOVQ   tmp+48(FP), R13
	MOVQ   DI, R14
	LEAQ   (DI)(R11*1), R15
	MOVQ   DX, AX
	MOVQ   dk4+64(FP), BX

ntq2:
	VMOVUPS  (AX), X9
	VMOVUPS  (R12), X14
	GDDK
	VADDPS   (R13), X4, X4
	VADDPS   16(R13), X5, X5
	VADDPS   32(R13), X6, X6
	VADDPS   48(R13), X7, X7
	VMOVNTPS X4, (R14)
	VMOVNTPS X5, (R15)
	VMOVNTPS X6, (R14)(R11*2)
	VMOVNTPS X7, (R15)(R11*2)
	GDYACC
	ADDQ     $16, AX
	ADDQ     $16, R12
	ADDQ     $64, R13
	ADDQ     $16, R14
	ADDQ     $16, R15
	DECQ     BX
	JNZ      ntq2

	GDYS

	LEAQ (SI)(R11*4), SI
	LEAQ (DI)(R11*4), DI
	ADDQ $16, R9
	ADDQ $16, R10
	DECQ CX
	JNZ  ntquad
	SFENCE // the streamed rows are visible before another core reads the state
	RET
