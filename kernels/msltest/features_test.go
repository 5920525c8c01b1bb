package msltest

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"
	"github.com/x448/float16"
)

// ulps is how many float32 steps apart a and b are (both finite, same sign).
func ulps(a, b float32) uint32 {
	x, y := math.Float32bits(a), math.Float32bits(b)
	if x > y {
		return x - y
	}
	return y - x
}

func TestMathFunctions(t *testing.T) {
	RequireCompiler(t)
	t.Parallel()
	xs := []float32{0.03125, 0.4, 0.5, 1, 1.5, 2.5, 3.7, 7.25, 12.5}
	const k = 32
	bufs := []Buffer{{Index: 0, Data: Bytes(xs)}, {Index: 1, Data: make([]byte, 4*k*len(xs))}}
	d := Dispatch{Threads: [3]int{len(xs), 1, 1}, Group: [3]int{4, 1, 1}}
	require.NoError(t, Run("testdata/features.metal", "math_funcs", d, bufs))
	got := f32s(t, bufs[1].Data)
	b2f := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	for i, x32 := range xs {
		x := float64(x32)
		// Functions of the C library may be an ulp or two from the
		// correctly rounded float64 result; the rest must be exact.
		approx := []float64{
			math.Exp(x), math.Exp2(x), math.Log(x), math.Log2(x),
			math.Log10(x), math.Log1p(x), math.Sqrt(x), 1 / math.Sqrt(x),
			math.Tanh(x - 2), math.Sin(x), math.Cos(x), math.Pow(x, 1.5),
		}
		exact := []float64{
			math.Floor(x), math.Ceil(x), math.Round(x), x,
			x, math.Max(x, 1), math.Min(x, 1), math.Max(x, 2),
			math.Min(x, 2), math.Min(math.Max(x, 0.5), 2), b2f(x > 1),
		}
		row := got[i*k : (i+1)*k]
		for j, want := range approx {
			require.LessOrEqualf(t, ulps(float32(want), row[j]), uint32(2), "function %d of %g: %g, want %g", j, x, row[j], want)
		}
		for j, want := range exact {
			require.Equalf(t, float32(want), row[12+j], "function %d of %g", 12+j, x)
		}
		require.Equal(t, row[0], row[23], "precise::exp is exp")
		require.Equal(t, row[23], row[24], "fast::exp is precise::exp")
		require.Equal(t, row[23], row[25], "metal::exp is precise::exp")
		require.Equal(t, []float32{1, 1}, row[26:28], "isnan(x/0*0), isinf(x/0)")
		require.Equal(t, float32(x-math.Floor(x)), row[28], "fract")
		require.Equal(t, float32(math.Copysign(1, x-1)*b2f(x != 1)), row[29], "sign")
		require.Equal(t, -float32(math.Trunc(x)), row[30], "trunc")
		require.Equal(t, float32(math.FMA(x, x, 1)), row[31], "fma")
	}
}

func TestVectorOps(t *testing.T) {
	RequireCompiler(t)
	t.Parallel()
	v := []float32{1, 2, 3, 4, -0.5, 0.25, 8, -3}
	n := []int32{5, -9, 12, 100, 0, 1, -1, 33}
	bufs := []Buffer{
		{Index: 0, Data: Bytes(v)},
		{Index: 1, Data: Bytes(n)},
		{Index: 2, Data: make([]byte, 4*16*2)},
		{Index: 3, Data: make([]byte, 4*2*2)},
	}
	d := Dispatch{Threads: [3]int{2, 1, 1}, Group: [3]int{2, 1, 1}}
	require.NoError(t, Run("testdata/features.metal", "vec_ops", d, bufs))
	got := f32s(t, bufs[2].Data)
	bits, err := Values[uint32](bufs[3].Data)
	require.NoError(t, err)
	for i := range 2 {
		a := v[i*4 : i*4+4]
		b := []float32{a[2]*2 - 1, a[3]*2 - 1, a[0]*2 - 1, a[1]*2 - 1}
		m := n[i*4 : i*4+4]
		var dot float32
		for j := range 4 {
			dot += float32(a[j] * b[j])
		}
		sel := make([]float32, 4)
		for j := range 4 {
			sel[j] = a[j]
			if a[j] > b[j] {
				sel[j] = b[j]
			}
		}
		want := []float32{
			dot, float32(math.Sqrt(float64(float32(a[0]*a[0]) + float32(a[1]*a[1])))),
			a[0] + b[2], a[1] + b[3],
			sel[0] + float32(sel[1]*10) + float32(sel[2]*100) + float32(sel[3]*1000), 1,
		}
		for j := range 4 {
			want = append(want, float32(m[j]%7+(m[j]<<2)-(m[j]&3)))
		}
		want = append(want, float32(uint32(float32(a[0]*3.7))), float32(uint32(float32(a[1]*3.7))), a[2], 16,
			max(a[0], 0.5), -a[3])
		require.Equalf(t, want, got[i*16:(i+1)*16], "thread %d", i)
		require.Equal(t, math.Float32bits(a[0]), bits[i*2])
		require.Equal(t, uint32(float16.Fromfloat32(a[1]).Bits())|uint32(0x3C00)<<16, bits[i*2+1])
	}
}

func TestSimdMisc(t *testing.T) {
	RequireCompiler(t)
	t.Parallel()
	const n = 64
	x := ramp(n, func(i int) float32 { return float32((i*7)%32) + 1 })
	x[40] = 150 // only simdgroup 1 has a value above 100
	bufs := []Buffer{{Index: 0, Data: Bytes(x)}, {Index: 1, Data: make([]byte, 4*12*n)}}
	d := Dispatch{Threads: [3]int{n, 1, 1}, Group: [3]int{64, 1, 1}}
	require.NoError(t, Run("testdata/features.metal", "simd_misc", d, bufs))
	got := f32s(t, bufs[1].Data)
	for s := range 2 {
		sg := x[s*32 : (s+1)*32]
		minv, anyBig := sg[0], float32(0)
		var halfs []float32
		for _, v := range sg {
			minv = min(minv, v)
			if v > 100 {
				anyBig = 1
			}
			halfs = append(halfs, float16.Fromfloat32(v).Float32())
		}
		// simd_sum over halves rounds each pairwise step to half.
		for stride := 1; stride < 32; stride *= 2 {
			for i := 0; i+stride < 32; i += 2 * stride {
				halfs[i] = float16.Fromfloat32(halfs[i] + halfs[i+stride]).Float32()
			}
		}
		var incl float32
		for l := range 32 {
			incl += sg[l]
			up := sg[l]
			if l >= 2 {
				up = sg[l-2]
			}
			first := float32(0)
			if l == 0 {
				first = 1
			}
			side := float32(10)
			if l >= 10 {
				side = 2 * 22
			}
			want := []float32{sg[5], sg[0], minv, 1, anyBig, incl, sg[31-l], up, halfs[0], first, side, 496}
			i := s*32 + l
			require.Equalf(t, want, got[i*12:(i+1)*12], "lane %d of simdgroup %d", l, s)
		}
	}
}

func TestAtomicsHistogram(t *testing.T) {
	RequireCompiler(t)
	t.Parallel()
	const n = 300
	x := make([]uint32, n)
	want := make([]uint32, 8)
	for i := range x {
		x[i] = uint32(i*i + 3*i)
		want[x[i]%8]++
	}
	bufs := []Buffer{{Index: 0, Data: Bytes(x)}, {Index: 1, Data: make([]byte, 4*8)}}
	d := Dispatch{Threads: [3]int{n, 1, 1}, Group: [3]int{64, 1, 1}}
	require.NoError(t, Run("testdata/features.metal", "histogram", d, bufs))
	got, err := Values[uint32](bufs[1].Data)
	require.NoError(t, err)
	require.Equal(t, want, got)
}
