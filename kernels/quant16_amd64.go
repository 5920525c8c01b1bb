package kernels

import "fmt"

// useAVX512 says whether the CPU and OS support the AVX-512 foundation and byte/word
// instructions the 16-lane quant kernels use (CPUID leaf 7 EBX bits 16 and 30; XCR0
// saving the opmask and zmm state).
var useAVX512 = useAVX2 && detectAVX512()

func detectAVX512() bool {
	_, b, _, _ := cpuid(7, 0)
	const f, bw = 1 << 16, 1 << 30
	return b&f != 0 && b&bw != 0 && xgetbv()&0xe6 == 0xe6
}

// qIota16 is the float32 table 0..15 the 4-bit kernels look codes up in.
var qIota16 = [16]float32{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}

// qAsm16 reports whether the 16-lane kernels run here.
func qAsm16() bool { return useAVX512 }

// qmv16 calls the 16-lane kernel for bits-bit codes in groups of chunks*32 (see
// quant16_amd64.h for the arguments).
func qmv16(bits, chunks int, x *float32, p *byte, rows, groups, dt int, sums, sc, bi, scr, out *float32, sstride, blocks int, mask uint16) {
	switch bits<<4 | chunks {
	case 4<<4 | 1:
		qmv16b4c1(x, p, rows, groups, dt, sums, sc, bi, scr, out, sstride, blocks, mask)
	case 4<<4 | 2:
		qmv16b4c2(x, p, rows, groups, dt, sums, sc, bi, scr, out, sstride, blocks, mask)
	case 4<<4 | 4:
		qmv16b4c4(x, p, rows, groups, dt, sums, sc, bi, scr, out, sstride, blocks, mask)
	case 8<<4 | 1:
		qmv16b8c1(x, p, rows, groups, dt, sums, sc, bi, scr, out, sstride, blocks, mask)
	case 8<<4 | 2:
		qmv16b8c2(x, p, rows, groups, dt, sums, sc, bi, scr, out, sstride, blocks, mask)
	case 8<<4 | 4:
		qmv16b8c4(x, p, rows, groups, dt, sums, sc, bi, scr, out, sstride, blocks, mask)
	default:
		panic(fmt.Sprintf("kernels: no 16-lane kernel for %d-bit codes in groups of %d", bits, 32*chunks))
	}
}

// The 16-lane kernels (quant16b4_amd64.s, quant16b8_amd64.s), one per code width and group size.
//
//go:noescape
func qmv16b4c1(x *float32, p *byte, rows, groups, dt int, sums, sc, bi, scr, out *float32, sstride, blocks int, mask uint16)

//go:noescape
func qmv16b4c2(x *float32, p *byte, rows, groups, dt int, sums, sc, bi, scr, out *float32, sstride, blocks int, mask uint16)

//go:noescape
func qmv16b4c4(x *float32, p *byte, rows, groups, dt int, sums, sc, bi, scr, out *float32, sstride, blocks int, mask uint16)

//go:noescape
func qmv16b8c1(x *float32, p *byte, rows, groups, dt int, sums, sc, bi, scr, out *float32, sstride, blocks int, mask uint16)

//go:noescape
func qmv16b8c2(x *float32, p *byte, rows, groups, dt int, sums, sc, bi, scr, out *float32, sstride, blocks int, mask uint16)

//go:noescape
func qmv16b8c4(x *float32, p *byte, rows, groups, dt int, sums, sc, bi, scr, out *float32, sstride, blocks int, mask uint16)

// gemv16bf16 and gemv16f16 are the half-weight linear's rows (linear16_amd64.s);
// stream takes them one at a time, as one prefetched stream.
//
//go:noescape
func gemv16bf16(x *float32, w *uint16, ldw uintptr, rows, k16 int, mask uint16, stream bool, out *float32)

//go:noescape
func gemv16f16(x *float32, w *uint16, ldw uintptr, rows, k16 int, mask uint16, stream bool, out *float32)

// qmm16x4 calls the blocked 16-lane kernel for bits-bit codes (qmm16_amd64.s).
func qmm16x4(bits int, x *float32, p *byte, ldp, pairs, groups, chunks int, sums *float32, blocks int, sc, bi *float32, sstride int, out *float32, ldo int) {
	if bits == 4 {
		qmm16b4x4(x, p, ldp, pairs, groups, chunks, sums, blocks, sc, bi, sstride, out, ldo)
		return
	}
	qmm16b8x4(x, p, ldp, pairs, groups, chunks, sums, blocks, sc, bi, sstride, out, ldo)
}

// The blocked kernels: two weight rows times four x rows a pass (qmm16.go).
//
//go:noescape
func qmm16b4x4(x *float32, p *byte, ldp, pairs, groups, chunks int, sums *float32, blocks int, sc, bi *float32, sstride int, out *float32, ldo int)

//go:noescape
func qmm16b8x4(x *float32, p *byte, ldp, pairs, groups, chunks int, sums *float32, blocks int, sc, bi *float32, sstride int, out *float32, ldo int)
