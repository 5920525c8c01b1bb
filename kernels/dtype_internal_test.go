package kernels

import (
	"math"
	"testing"
)

func TestToF32OddHalf(t *testing.T) {
	b := make([]byte, 2)
	v := 1 + math.Pow(2, -11) + math.Pow(2, -30)
	Store(Float16, b, 0, v)
	if got := Load(Float16, b, 0); got != 1.0009765625 {
		t.Fatalf("float16 of %v: %v", v, got)
	}
	v = 1 + math.Pow(2, -8) + math.Pow(2, -30)
	Store(BFloat16, b, 0, v)
	if got := Load(BFloat16, b, 0); got != 1.0078125 {
		t.Fatalf("bfloat16 of %v: %v", v, got)
	}
	Store(Float16, b, 0, -v)
	if got := Load(Float16, b, 0); got != -1.00390625 {
		t.Fatalf("float16 of %v: %v", -v, got)
	}
}
