package kernels

import (
	"math"
	"math/rand"
	"testing"
)

// TestReduceExpF64Accuracy checks the Go twins' exp against math.Exp over float32's
// whole range: relative error below 1e-13, exact 0 / +Inf / NaN at the ends.
func TestReduceExpF64Accuracy(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	worst := 0.0
	for i := 0; i < 200000; i++ {
		x := -104 + rng.Float64()*193
		if i < 2000 {
			x = float64(i-1000) * 1e-3 // around 0, where r is k ln2 away from x
		}
		w := math.Exp(x)
		e := math.Abs(expF64(x)-w) / w
		worst = max(worst, e)
		if e > 1e-13 {
			t.Fatalf("expF64(%v) = %v, want %v (rel err %.3g)", x, expF64(x), w, e)
		}
	}
	t.Logf("worst relative error %.3g", worst)
	for x, w := range map[float64]float64{math.Inf(-1): 0, -105: 0, 0: 1, 90: math.Inf(1), math.Inf(1): math.Inf(1)} {
		if got := expF64(x); got != w {
			t.Fatalf("expF64(%v) = %v, want %v", x, got, w)
		}
	}
	if !math.IsNaN(expF64(math.NaN())) {
		t.Fatal("expF64(NaN) is not NaN")
	}
}

func BenchmarkReduceExpF64(b *testing.B) {
	x := make([]float64, 256)
	for i := range x {
		x[i] = -float64(i) / 16
	}
	b.Run("expF64", func(b *testing.B) {
		s := 0.0
		for b.Loop() {
			for _, v := range x {
				s += expF64(v)
			}
		}
		_ = s
	})
	b.Run("math.Exp", func(b *testing.B) {
		s := 0.0
		for b.Loop() {
			for _, v := range x {
				s += math.Exp(v)
			}
		}
		_ = s
	})
}
