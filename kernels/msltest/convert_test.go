package msltest

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/x448/float16"
)

// bf16 rounds a float32 to bfloat by picking the nearer of the two
// truncations around it (ties to the even one), measured in float64; a
// step past the largest finite bfloat counts as 2^128, which is infinity.
func bf16(x float32) uint16 {
	if x != x {
		return 0x7FC0
	}
	val := func(u uint32) float64 {
		if u&0x7FFFFFFF == 0x7F800000 {
			return math.Copysign(0x1p128, float64(x))
		}
		return float64(math.Float32frombits(u))
	}
	lo := math.Float32bits(x) &^ 0xFFFF
	if lo == math.Float32bits(x) {
		return uint16(lo >> 16) // exact, infinities included
	}
	hi := lo + 0x10000
	dlo := math.Abs(float64(x) - val(lo))
	dhi := math.Abs(val(hi) - float64(x))
	if dlo < dhi || (dlo == dhi && (lo>>16)&1 == 0) {
		return uint16(lo >> 16)
	}
	return uint16(hi >> 16)
}

func conversionInputs() []float32 {
	xs := []float32{
		0, float32(math.Copysign(0, -1)), 1, -1, 65504, 65519.99, 65520, 1e9, -1e9,
		float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()),
		0x1p-24, 0x1p-25, 0x1.0001p-25, 0x1p-26, 0x1.8p-24, 0x1p-14, 0x1.ff8p-15,
		1 + 0x1p-11, 1 + 3*0x1p-11, 1 + 0x1p-8, 1 + 3*0x1p-8, 1 + 0x1.0002p-8,
		math.MaxFloat32, -math.MaxFloat32, 0x1p-149, 3.14159265, -2.718281828,
	}
	r := rand.New(rand.NewPCG(1, 2))
	for range 4000 {
		e := r.IntN(60) - 35
		m := r.Float64() + 1
		if r.IntN(2) == 0 {
			m = -m
		}
		xs = append(xs, float32(math.Ldexp(m, e)))
	}
	return xs
}

func TestHalfBfloatRoundTrip(t *testing.T) {
	RequireCompiler(t)
	t.Parallel()
	xs := conversionInputs()
	n := len(xs)
	bufs := []Buffer{
		{Index: 0, Data: Bytes(xs)},
		{Index: 1, Data: make([]byte, 2*n)},
		{Index: 2, Data: make([]byte, 2*n)},
		{Index: 3, Data: make([]byte, 4*n)},
		{Index: 4, Data: make([]byte, 4*n)},
	}
	d := Dispatch{Threads: [3]int{n, 1, 1}, Group: [3]int{256, 1, 1}}
	require.NoError(t, Run("testdata/convert.metal", "round_trip", d, bufs))
	h, err := Values[uint16](bufs[1].Data)
	require.NoError(t, err)
	b, err := Values[uint16](bufs[2].Data)
	require.NoError(t, err)
	hf, bf := f32s(t, bufs[3].Data), f32s(t, bufs[4].Data)
	for i, x := range xs {
		wantH := float16.Fromfloat32(x)
		if x != x {
			require.Truef(t, float16.Frombits(h[i]).IsNaN(), "half(NaN) = %#04x", h[i])
			require.Truef(t, hf[i] != hf[i], "float(half(NaN)) = %v", hf[i])
			require.Truef(t, b[i]&0x7F80 == 0x7F80 && b[i]&0x7F != 0, "bfloat(NaN) = %#04x", b[i])
			continue
		}
		require.Equalf(t, wantH.Bits(), h[i], "half(%g)", x)
		require.Equalf(t, math.Float32bits(wantH.Float32()), math.Float32bits(hf[i]), "float(half(%g))", x)
		require.Equalf(t, bf16(x), b[i], "bfloat(%g)", x)
		require.Equalf(t, uint32(b[i])<<16, math.Float32bits(bf[i]), "float(bfloat(%g))", x)
	}
}

func TestHalfArithmeticRounds(t *testing.T) {
	RequireCompiler(t)
	t.Parallel()
	const n = 512
	r := rand.New(rand.NewPCG(3, 4))
	a := make([]uint16, n)
	b := make([]uint16, n)
	for i := range n {
		a[i] = float16.Fromfloat32(float32(r.NormFloat64() * 40)).Bits()
		b[i] = float16.Fromfloat32(float32(r.NormFloat64() * 3)).Bits()
	}
	bufs := []Buffer{
		{Index: 0, Data: Bytes(a)},
		{Index: 1, Data: Bytes(b)},
		{Index: 2, Data: make([]byte, 2*n)},
		{Index: 3, Data: make([]byte, 2*n)},
	}
	d := Dispatch{Threads: [3]int{n, 1, 1}, Group: [3]int{128, 1, 1}}
	require.NoError(t, Run("testdata/convert.metal", "half_math", d, bufs))
	y, err := Values[uint16](bufs[2].Data)
	require.NoError(t, err)
	dots, err := Values[uint16](bufs[3].Data)
	require.NoError(t, err)
	h := func(x float32) float32 { return float16.Fromfloat32(x).Float32() }
	for i := range n {
		av, bv := float16.Frombits(a[i]).Float32(), float16.Frombits(b[i]).Float32()
		p := h(av * bv)
		require.Equalf(t, float16.Fromfloat32(p+av).Bits(), y[i], "a*b+a at %d", i)
		s := h(av * av)
		for _, c := range []float32{bv, 1, 2} {
			s = h(s + h(c*c))
		}
		require.Equalf(t, float16.Fromfloat32(s).Bits(), dots[i], "dot at %d", i)
	}
}
