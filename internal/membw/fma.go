package membw

import (
	"runtime"
	"sync"
	"time"
)

// FMARound is the float32 floating-point operations of one round of fmaRounds:
// 2 chains-rounds of 12 independent 16-lane fused multiply-adds (2 FLOPs a lane).
const FMARound = 2 * 12 * 16 * 2

// FMAProbe measures the float32 fused multiply-add peak with threads goroutines at
// once (0: runtime.GOMAXPROCS), each running twelve independent 16-lane chains
// (AVX-512; enough chains to cover the latency of two FMA pipes) for about d, passes
// times, and returns the best pass's FLOP/s (0 where the CPU lacks AVX-512, the only
// width the blocked kernels compare against). The matrix benchmarks report their
// FLOP/s as a share of it, measured in the same run.
func FMAProbe(threads, passes int, d time.Duration) float64 {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	if !hasAVX512 || passes <= 0 {
		return 0
	}
	// Calibrate the rounds of one call to about a millisecond on one thread.
	rounds := 1 << 12
	for {
		t0 := time.Now()
		fmaRounds(rounds)
		if time.Since(t0) > time.Millisecond || rounds > 1<<30 {
			break
		}
		rounds *= 2
	}
	calls := max(1, int(d/time.Millisecond))
	best := 0.0
	for range passes {
		var wg sync.WaitGroup
		t0 := time.Now()
		for range threads {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range calls {
					fmaRounds(rounds)
				}
			}()
		}
		wg.Wait()
		r := float64(threads*calls*rounds) * FMARound / time.Since(t0).Seconds()
		best = max(best, r)
	}
	return best
}
