package kernels

import "testing"

// BenchmarkMaskOps times the decode step's attention-mask ops at a depth of 5,000 keys:
// an int32 row against one value (greater_equal, the padding test), and bool rows
// combined (logical_and).
func BenchmarkMaskOps(b *testing.B) {
	const n = 5000
	row := NewArg(Contiguous(Int32, 1, n))
	for i, p := 0, I32(row.Data); i < n; i++ {
		p[i] = int32(i)
	}
	pad := NewArg(Contiguous(Int32, 1, 1))
	I32(pad.Data)[0] = 7
	padB := pad
	padB.Layout = BroadcastLayout(&pad.Layout, &row.Layout)
	m1, m2 := NewArg(Contiguous(Bool, 1, n)), NewArg(Contiguous(Bool, 1, n))
	for i := range m2.Data {
		m2.Data[i] = byte(i % 3)
	}
	ge := &Launch{Kernel: BinaryKernel(OpGreatEq), NArgs: 3, Args: [MaxArgs]Arg{row, padB, m1}}
	and := &Launch{Kernel: BinaryKernel(OpAnd), NArgs: 3, Args: [MaxArgs]Arg{m1, m2, NewArg(Contiguous(Bool, 1, n))}}
	b.Run("greater_equal", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			Run(ge)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/elem")
	})
	b.Run("logical_and", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			Run(and)
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/elem")
	})
}
