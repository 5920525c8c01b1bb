#include "textflag.h"
#include "quant16_amd64.h"

// The 16-lane kernels for 8-bit codes, one per group size (see quant16_amd64.h).
// func qmv16b8c1(x *float32, p *byte, rows, groups, dt int, sums, sc, bi, scr, out *float32, sstride, blocks int, mask uint16)
TEXT ·qmv16b8c1(SB), NOSPLIT, $0-98
	QSETUP
grp:
	PREFETCHT0 (QPFDIST+0)(R15)
	Q8FIRST(0, 0)
	VFMADD231PS.BCST 0(R13), Z4, Z0
	Q8FIRST(32, 128)
	VFMADD231PS.BCST 4(R13), Z4, Z10
	ADDQ $64, R15
	ADDQ $256, R12
	ADDQ $8, R13
	DECQ R14
	JNZ  grp
gtail:
	TESTQ $1, DX
	JZ    gend
	Q8FIRST(0, 0)
	VFMADD231PS.BCST 0(R13), Z4, Z0
	ADDQ $32, R15
	ADDQ $128, R12
	ADDQ $4, R13
	QFINISH

// func qmv16b8c2(x *float32, p *byte, rows, groups, dt int, sums, sc, bi, scr, out *float32, sstride, blocks int, mask uint16)
TEXT ·qmv16b8c2(SB), NOSPLIT, $0-98
	QSETUP
grp:
	PREFETCHT0 (QPFDIST+0)(R15)
	PREFETCHT0 (QPFDIST+64)(R15)
	Q8FIRST(0, 0)
	Q8NEXT(32, 128)
	VFMADD231PS.BCST 0(R13), Z4, Z0
	Q8FIRST(64, 256)
	Q8NEXT(96, 384)
	VFMADD231PS.BCST 4(R13), Z4, Z10
	ADDQ $128, R15
	ADDQ $512, R12
	ADDQ $8, R13
	DECQ R14
	JNZ  grp
gtail:
	TESTQ $1, DX
	JZ    gend
	Q8FIRST(0, 0)
	Q8NEXT(32, 128)
	VFMADD231PS.BCST 0(R13), Z4, Z0
	ADDQ $64, R15
	ADDQ $256, R12
	ADDQ $4, R13
	QFINISH

// func qmv16b8c4(x *float32, p *byte, rows, groups, dt int, sums, sc, bi, scr, out *float32, sstride, blocks int, mask uint16)
TEXT ·qmv16b8c4(SB), NOSPLIT, $0-98
	QSETUP
grp:
	PREFETCHT0 (QPFDIST+0)(R15)
	PREFETCHT0 (QPFDIST+64)(R15)
	PREFETCHT0 (QPFDIST+128)(R15)
	PREFETCHT0 (QPFDIST+192)(R15)
	Q8FIRST(0, 0)
	Q8NEXT(32, 128)
	Q8NEXT(64, 256)
	Q8NEXT(96, 384)
	VFMADD231PS.BCST 0(R13), Z4, Z0
	Q8FIRST(128, 512)
	Q8NEXT(160, 640)
	Q8NEXT(192, 768)
	Q8NEXT(224, 896)
	VFMADD231PS.BCST 4(R13), Z4, Z10
	ADDQ $256, R15
	ADDQ $1024, R12
	ADDQ $8, R13
	DECQ R14
	JNZ  grp
gtail:
	TESTQ $1, DX
	JZ    gend
	Q8FIRST(0, 0)
	Q8NEXT(32, 128)
	Q8NEXT(64, 256)
	Q8NEXT(96, 384)
	VFMADD231PS.BCST 0(R13), Z4, Z0
	ADDQ $128, R15
	ADDQ $512, R12
	ADDQ $4, R13
	QFINISH
