package kernels

import (
	"math"
	"math/big"
	"math/rand"
	"testing"
)

// fma32Exact is a*b + c computed exactly and rounded once to float32 (big.Float).
func fma32Exact(a, b, c float32) float32 {
	x := new(big.Float).SetPrec(400).SetFloat64(float64(a))
	x.Mul(x, new(big.Float).SetPrec(400).SetFloat64(float64(b)))
	x.Add(x, new(big.Float).SetPrec(400).SetFloat64(float64(c)))
	f, _ := x.Float32()
	return f
}

// TestFma32Exact checks fma32 against the exact computation on random operands of
// every magnitude, on products that land exactly halfway between two float32 values
// with a tiny c of either sign (where rounding the float64 sum again goes wrong), on
// zeros of both signs, subnormals and overflow.
func TestFma32Exact(t *testing.T) {
	rng := rand.New(rand.NewSource(23))
	check := func(a, b, c float32) {
		t.Helper()
		want, got := fma32Exact(a, b, c), fma32(a, b, c)
		if math.Float32bits(want) != math.Float32bits(got) {
			t.Fatalf("fma32(%g, %g, %g) = %g (%#x), want %g (%#x)", a, b, c, got, math.Float32bits(got), want, math.Float32bits(want))
		}
	}
	for i := 0; i < 50000; i++ {
		a := float32(rng.NormFloat64() * math.Pow(2, float64(rng.Intn(60)-30)))
		b := float32(rng.Intn(256))
		c := float32(rng.NormFloat64() * math.Pow(2, float64(rng.Intn(120)-60)))
		check(a, b, c)
		check(a, float32(rng.NormFloat64()), c)
	}
	for i := 0; i < 20000; i++ {
		// a*3 with a's last bits 01 lands on a float32 midpoint; c far below it.
		a := math.Float32frombits(0x3f800001 + uint32(rng.Intn(1<<22))*4)
		for _, c := range []float32{1e-30, -1e-30, 1e-45, -1e-45, 0} {
			check(a, 3, c)
			check(a, 5, c)
		}
	}
	negZero := float32(math.Copysign(0, -1))
	for _, v := range [][3]float32{{0, 5, negZero}, {negZero, 5, negZero}, {negZero, 0, 0}, {1e-45, 3, 1e-45},
		{math.MaxFloat32, 2, -math.MaxFloat32}, {math.MaxFloat32, 1, math.MaxFloat32 / (1 << 23)}} {
		check(v[0], v[1], v[2])
	}
}
