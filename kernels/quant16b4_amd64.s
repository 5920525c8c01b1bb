#include "textflag.h"
#include "quant16_amd64.h"

// The 16-lane kernels for 4-bit codes, one per group size (see quant16_amd64.h).
// func qmv16b4c1(x *float32, p *byte, rows, groups, dt int, sums, sc, bi, scr, out *float32, sstride, blocks int, mask uint16)
TEXT ·qmv16b4c1(SB), NOSPLIT, $0-98
	QSETUP
grp:
	PREFETCHT0 (QPFDIST+0)(R15)
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
	QFINISH

// func qmv16b4c2(x *float32, p *byte, rows, groups, dt int, sums, sc, bi, scr, out *float32, sstride, blocks int, mask uint16)
TEXT ·qmv16b4c2(SB), NOSPLIT, $0-98
	QSETUP
grp:
	PREFETCHT0 (QPFDIST+0)(R15)
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
	QFINISH

// func qmv16b4c4(x *float32, p *byte, rows, groups, dt int, sums, sc, bi, scr, out *float32, sstride, blocks int, mask uint16)
TEXT ·qmv16b4c4(SB), NOSPLIT, $0-98
	QSETUP
grp:
	PREFETCHT0 (QPFDIST+0)(R15)
	PREFETCHT0 (QPFDIST+64)(R15)
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
	QFINISH
