package membw

import "testing"

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
