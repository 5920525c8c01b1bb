package membw

import (
	"testing"
	"time"
)

// TestReadSum: the sum is the XOR of every 8-byte word (a changed byte anywhere
// changes it), so no read can be skipped.
func TestReadSum(t *testing.T) {
	b := make([]byte, 4096)
	if got := readSum(b); got != 0 {
		t.Fatalf("zeros: %d", got)
	}
	for _, i := range []int{0, 7, 1000, 4095} {
		clear(b)
		b[i] = 1
		if got := readSum(b); got == 0 {
			t.Fatalf("byte %d set: sum 0", i)
		}
	}
}

// BenchmarkProbe reports the read bandwidth of 1 GiB over every core.
func BenchmarkProbe(b *testing.B) {
	for range b.N {
		b.ReportMetric(Probe(1<<30, 0, 3)/1e9, "GB/s")
	}
}

// TestFMAProbe: the probe reports a positive rate where the CPU has AVX-512, and 0
// elsewhere.
func TestFMAProbe(t *testing.T) {
	r := FMAProbe(1, 1, time.Millisecond)
	if hasAVX512 != (r > 0) {
		t.Fatalf("AVX-512 %v, rate %g", hasAVX512, r)
	}
}

// BenchmarkFMAProbe reports the float32 FMA peak over every core.
func BenchmarkFMAProbe(b *testing.B) {
	for range b.N {
		b.ReportMetric(FMAProbe(0, 3, 200*time.Millisecond)/1e9, "GFLOP/s")
	}
}
