package membw

import (
	"runtime"
	"sync"
	"time"
)

// Probe reads a buffer of size bytes (rounded down to a multiple of 4 KiB per
// goroutine) with threads goroutines at once (0: runtime.GOMAXPROCS), passes times,
// and returns the best pass's rate in bytes per second. The buffer is allocated and
// touched once before timing and released after.
func Probe(size int64, threads, passes int) float64 {
	if threads <= 0 {
		threads = runtime.GOMAXPROCS(0)
	}
	per := size / int64(threads) &^ 4095
	if per <= 0 || passes <= 0 {
		return 0
	}
	bufs := make([][]byte, threads)
	for i := range bufs {
		bufs[i] = make([]byte, per)
		for j := 0; j < len(bufs[i]); j += 4096 {
			bufs[i][j] = byte(j >> 12) // fault the pages in before timing
		}
	}
	best := 0.0
	var sink uint64
	var mu sync.Mutex
	for range passes {
		var wg sync.WaitGroup
		t0 := time.Now()
		for _, b := range bufs {
			wg.Add(1)
			go func() {
				defer wg.Done()
				s := readSum(b)
				mu.Lock()
				sink += s
				mu.Unlock()
			}()
		}
		wg.Wait()
		if r := float64(per*int64(threads)) / time.Since(t0).Seconds(); r > best {
			best = r
		}
	}
	if sink == 1 { // keep the reads observable
		runtime.KeepAlive(bufs)
	}
	return best
}
