package nn

import (
	"math"
	"math/bits"
)

// Size arithmetic that refuses to overflow: a hostile checkpoint header can claim
// shapes whose byte counts do not fit in int64.

// MulInt64 returns a*b for non-negative a and b, with ok false on overflow.
func MulInt64(a, b int64) (int64, bool) {
	if a < 0 || b < 0 {
		return 0, false
	}
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt64 {
		return 0, false
	}
	return int64(lo), true
}

// AddInt64 returns a+b for non-negative a and b, with ok false on overflow.
func AddInt64(a, b int64) (int64, bool) {
	if a < 0 || b < 0 || a > math.MaxInt64-b {
		return 0, false
	}
	return a + b, true
}
