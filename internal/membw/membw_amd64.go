package membw

import "encoding/binary"

// hasAVX2 says whether the CPU has AVX2 (CPUID leaf 7, EBX bit 5) and the OS saves the
// ymm state (CPUID leaf 1 OSXSAVE and AVX, XCR0 bits 1-2). The package detects it itself
// rather than asking kernels: scripts/bench-real.sh copies it into older revisions, whose
// kernels may not say.
var hasAVX2 = func() bool {
	_, _, c, _ := cpuid(1, 0)
	if c&(1<<27) == 0 || c&(1<<28) == 0 || xgetbv()&6 != 6 {
		return false
	}
	_, b, _, _ := cpuid(7, 0)
	return b&(1<<5) != 0
}()

// readSum reads every byte of b (len a multiple of 128) and returns a value that
// depends on all of them.
func readSum(b []byte) uint64 {
	if len(b) < 128 {
		return 0
	}
	if !hasAVX2 {
		var s uint64
		for i := 0; i+8 <= len(b); i += 8 {
			s ^= binary.LittleEndian.Uint64(b[i:])
		}
		return s
	}
	return readAVX2(&b[0], len(b)/128)
}

// readAVX2 streams n 128-byte blocks at p with 256-bit loads.
//
//go:noescape
func readAVX2(p *byte, n int) uint64

// cpuid executes CPUID with EAX = eax and ECX = ecx.
func cpuid(eax, ecx uint32) (a, b, c, d uint32)

// xgetbv returns the low word of XCR0.
func xgetbv() uint32

// hasAVX512 says whether the CPU has the AVX-512 foundation (CPUID leaf 7 EBX bit 16)
// and the OS saves the opmask and zmm state (XCR0 bits 5-7).
var hasAVX512 = hasAVX2 && func() bool {
	_, b, _, _ := cpuid(7, 0)
	return b&(1<<16) != 0 && xgetbv()&0xe6 == 0xe6
}()

// fmaRounds runs n rounds of the FMA probe's chains.
func fmaRounds(n int) { fmaAVX512(n) }

// fmaAVX512 runs n rounds of 24 zmm fused multiply-adds (twelve chains, two each).
//
//go:noescape
func fmaAVX512(n int) float32
