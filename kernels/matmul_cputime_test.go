package kernels_test

import (
	"math/rand"
	"runtime"
	"syscall"
	"testing"

	"github.com/ingotml/ingot/kernels"
)

func threadCPU() int64 {
	var ru syscall.Rusage
	syscall.Getrusage(1, &ru) // RUSAGE_THREAD
	return ru.Utime.Nano() + ru.Stime.Nano()
}

func TestTmpCPUTime(t *testing.T) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	rng := rand.New(rand.NewSource(3))
	for _, s := range []struct{ m, n, k int }{{1, 192, 64}, {1, 64, 64}, {7, 192, 64}, {100, 192, 64}} {
		l := mmLinearLaunch(mmRandF32(rng, s.m*s.k), mmRandF32(rng, s.n*s.k), s.m, s.n, s.k)
		iters := 2000000 / (s.m * s.n)
		for i := 0; i < 100; i++ {
			kernels.Run(l)
		}
		c0 := threadCPU()
		for i := 0; i < iters; i++ {
			kernels.Run(l)
		}
		ns := float64(threadCPU()-c0) / float64(iters)
		t.Logf("linear %dx%d@(%dx%d)T: %.0f cpu-ns/op, %.2f GFLOP/s", s.m, s.k, s.n, s.k, ns, float64(2*s.m*s.n*s.k)/ns)
	}
	const rows, topk, e, o, k = 1, 2, 8, 64, 64
	l := gtGatherMMLaunch(mmRandF32(rng, rows*k), mmRandF32(rng, e*o*k), []int32{6, 1}, rows, topk, e, o, k)
	c0 := threadCPU()
	for i := 0; i < 20000; i++ {
		kernels.Run(l)
	}
	ns := float64(threadCPU()-c0) / 20000
	t.Logf("gather_mm T1 k2 E8 O64 K64: %.0f cpu-ns/op, %.2f GFLOP/s", ns, float64(2*rows*topk*o*k)/ns)
}
