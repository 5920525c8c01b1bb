//go:build linux

package kernels

import (
	"fmt"
	"math/rand"
	"runtime"
	"syscall"
	"testing"
	"unsafe"
)

// threadCPU is the calling thread's CPU time in nanoseconds (CLOCK_THREAD_CPUTIME_ID).
func threadCPU() int64 {
	var ts syscall.Timespec
	syscall.Syscall(syscall.SYS_CLOCK_GETTIME, 3, uintptr(unsafe.Pointer(&ts)), 0)
	return ts.Nano()
}

// BenchmarkQuantRowsCPU measures the quantized row kernels on a matrix that stays in
// cache (256 rows of 1,024 codes, group 64, bfloat16 scales) in the calling thread's
// CPU time per group of 64 codes (cpu-ns/group): the kernels' own cost, which other
// jobs on a loaded machine change much less than wall time. It runs qMatrix.dotRows,
// the path qmv takes, so it compares across revisions that have it.
func BenchmarkQuantRowsCPU(b *testing.B) {
	for _, bits := range []int{4, 8} {
		b.Run(fmt.Sprintf("q%dg64", bits), func(b *testing.B) {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			rng := rand.New(rand.NewSource(1))
			const rows, cols = 256, 1024
			m := qsimdMatrix(rng, rows, cols, bits, 64, BFloat16)
			x := simdRandRow(rng, cols, false)
			sums := make([]float32, m.groups)
			m.groupSums(x, sums)
			out := make([]float32, rows)
			var q qSIMD
			qp := q.init(&m)
			t0 := threadCPU()
			for b.Loop() {
				m.dotRows(x, sums, 0, out, qp)
			}
			b.ReportMetric(float64(threadCPU()-t0)/float64(b.N*rows*m.groups), "cpu-ns/group")
		})
	}
}
