#include "textflag.h"
#include "red16_amd64.h"

// The half-weight linear's rows (linear16.go defines the order): rows rows of k16*16
// + tail half-precision weights (ldw bytes apart) dotted with x (float32), four rows
// per pass (independent chains of fused multiply-adds), then one at a time; K1 masks
// the tail. With stream set every row is taken one at a time: the rows are then one
// sequential stream from memory, prefetched 8 KB ahead, which reads DRAM faster
// than four interleaved rows do (a decode's products, read once a step).
//
// Registers: SI x, R15 the pass's first row, BX ldw, R9 3*ldw, CX rows left, DX
// k16, R8 out, R12 the byte offset into the rows (x at twice it), R14 the step count;
// Z0-Z3 the rows' 16 lanes.


// GEMV16 is a kernel's body, WIDEN(addr) / WIDENZ(addr) (masked by K1) loading 16
// weights from addr as float32 into Z4: four rows a pass, LEAQ'ing the next four rows'
// address into AX to prefetch them alongside (rows are contiguous), then one at a time.
#define GEMV16 \
	MOVQ x+0(FP), SI; \
	MOVQ w+8(FP), R15; \
	MOVQ ldw+16(FP), BX; \
	MOVQ rows+24(FP), CX; \
	MOVQ k16+32(FP), DX; \
	KMOVW mask+40(FP), K1; \
	MOVQ out+48(FP), R8; \
	LEAQ (BX)(BX*2), R9; \
	CMPB stream+42(FP), $0; \
	JNE  one; \
	CMPQ CX, $4; \
	JLT  one; \
four: \
	VPXORD Z0, Z0, Z0; \
	VPXORD Z1, Z1, Z1; \
	VPXORD Z2, Z2, Z2; \
	VPXORD Z3, Z3, Z3; \
	LEAQ (R15)(BX*1), R10; \
	LEAQ (R15)(BX*2), R11; \
	LEAQ (R15)(R9*1), R13; \
	LEAQ (R15)(BX*4), AX; \
	XORQ R12, R12; \
	MOVQ DX, R14; \
	TESTQ R14, R14; \
	JZ fourt; \
fourk: \
	PREFETCHT0 (AX)(R12*4); \
	PREFETCHT0 64(AX)(R12*4); \
	VMOVUPS (SI)(R12*2), Z5; \
	WIDEN((R15)(R12*1)); \
	VFMADD231PS Z5, Z4, Z0; \
	WIDEN((R10)(R12*1)); \
	VFMADD231PS Z5, Z4, Z1; \
	WIDEN((R11)(R12*1)); \
	VFMADD231PS Z5, Z4, Z2; \
	WIDEN((R13)(R12*1)); \
	VFMADD231PS Z5, Z4, Z3; \
	ADDQ $32, R12; \
	DECQ R14; \
	JNZ fourk; \
fourt: \
	KORTESTW K1, K1; \
	JZ foure; \
	VMOVUPS.Z (SI)(R12*2), K1, Z5; \
	WIDENZ((R15)(R12*1)); \
	VFMADD231PS Z5, Z4, Z0; \
	WIDENZ((R10)(R12*1)); \
	VFMADD231PS Z5, Z4, Z1; \
	WIDENZ((R11)(R12*1)); \
	VFMADD231PS Z5, Z4, Z2; \
	WIDENZ((R13)(R12*1)); \
	VFMADD231PS Z5, Z4, Z3; \
foure: \
	RED16(Z0, Y0, X0); \
	VMOVSS X0, 0(R8); \
	RED16(Z1, Y1, X1); \
	VMOVSS X1, 4(R8); \
	RED16(Z2, Y2, X2); \
	VMOVSS X2, 8(R8); \
	RED16(Z3, Y3, X3); \
	VMOVSS X3, 12(R8); \
	ADDQ $16, R8; \
	LEAQ (R15)(BX*4), R15; \
	SUBQ $4, CX; \
	CMPQ CX, $4; \
	JGE four; \
one: \
	TESTQ CX, CX; \
	JZ done; \
onerow: \
	VPXORD Z0, Z0, Z0; \
	XORQ R12, R12; \
	MOVQ DX, R14; \
	TESTQ R14, R14; \
	JZ onet; \
onek: \
	PREFETCHT0 8192(R15)(R12*1); \
	WIDEN((R15)(R12*1)); \
	VFMADD231PS (SI)(R12*2), Z4, Z0; \
	ADDQ $32, R12; \
	DECQ R14; \
	JNZ onek; \
onet: \
	KORTESTW K1, K1; \
	JZ onee; \
	VMOVUPS.Z (SI)(R12*2), K1, Z5; \
	WIDENZ((R15)(R12*1)); \
	VFMADD231PS Z5, Z4, Z0; \
onee: \
	RED16(Z0, Y0, X0); \
	VMOVSS X0, (R8); \
	ADDQ $4, R8; \
	ADDQ BX, R15; \
	DECQ CX; \
	JNZ onerow; \
done: \
	VZEROUPPER; \
	RET

// func gemv16bf16(x *float32, w *uint16, ldw uintptr, rows, k16 int, mask uint16, stream bool, out *float32)
TEXT ·gemv16bf16(SB), NOSPLIT, $0-56
#define WIDEN(a) VPMOVZXWD a, Z4; VPSLLD $16, Z4, Z4
#define WIDENZ(a) VPMOVZXWD.Z a, K1, Z4; VPSLLD $16, Z4, Z4
	GEMV16
#undef WIDEN
#undef WIDENZ

// func gemv16f16(x *float32, w *uint16, ldw uintptr, rows, k16 int, mask uint16, stream bool, out *float32)
TEXT ·gemv16f16(SB), NOSPLIT, $0-56
#define WIDEN(a) VCVTPH2PS a, Z4
#define WIDENZ(a) VCVTPH2PS.Z a, K1, Z4
	GEMV16
#undef WIDEN
#undef WIDENZ
