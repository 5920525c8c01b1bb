package kernels

import (
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
)

// expMaxULP is exp32's measured maximum error in float32 ulps of the true result, over
// normal results: 0.982 ulp at x = -81.39 sweeping every 7th float32 of [expLo, expHi];
// the test sweeps every 251st.
const expMaxULP = 1

// expULPErr is |got - e^x| in ulps of the float32 nearest e^x.
func expULPErr(got float32, x float32) float64 {
	want := math.Exp(float64(x))
	ulp := math.Ldexp(1, math.Ilogb(float64(float32(want)))-23)
	return math.Abs(float64(got)-want) / ulp
}

func TestExp32Error(t *testing.T) {
	worst, at := 0.0, float32(0)
	check := func(x float32) {
		if e := expULPErr(exp32(x), x); e > worst {
			worst, at = e, x
		}
	}
	for b := uint32(0); b <= math.Float32bits(-expLo); b += 251 { // negative side
		check(-math.Float32frombits(b))
	}
	for b := uint32(0); b <= math.Float32bits(expHi); b += 251 {
		check(math.Float32frombits(b))
	}
	check(expLo)
	check(expHi)
	t.Logf("max error %.3f ulp at x = %v", worst, at)
	require.LessOrEqual(t, worst, float64(expMaxULP))
}

func TestExp32Range(t *testing.T) {
	inf := float32(math.Inf(1))
	require.Equal(t, float32(1), exp32(0))
	require.Equal(t, float32(1), exp32(float32(math.Copysign(0, -1))))
	require.Equal(t, inf, exp32(inf))
	require.Equal(t, inf, exp32(math.Nextafter32(expHi, inf)))
	require.Equal(t, float32(0), exp32(float32(math.Inf(-1))))
	require.Equal(t, float32(0), exp32(math.Nextafter32(expLo, -inf)))
	require.Equal(t, float32(0), exp32(-1000))
	nan := exp32(float32(math.NaN()))
	require.True(t, nan != nan)
}

// TestExpArrayMatchesExp32 checks the vector path (the assembly on amd64 with AVX2)
// against exp32 bit for bit, across the whole range, both signs of a, and the
// out-of-range and NaN lanes.
func TestExpArrayMatchesExp32(t *testing.T) {
	t.Logf("useAVX2 = %v", useAVX2)
	rng := rand.New(rand.NewSource(9))
	src := make([]float32, 0, 1<<16)
	for b := uint32(0); b < 0xffffffff-(1<<16); b += 1<<16 + uint32(rng.Intn(1000)) {
		src = append(src, math.Float32frombits(b)) // every exponent, both signs, NaNs
	}
	for range 4096 {
		src = append(src, float32(rng.Float64()*240-120))
	}
	src = append(src, expLo, expHi, 0, float32(math.Inf(1)), float32(math.Inf(-1)))
	src = src[:len(src)&^7+3] // a scalar tail too
	dst := make([]float32, len(src))
	for _, ab := range [][2]float32{{1, 0}, {-1, 0}, {1, 2.5}, {-1, -7}} {
		expArray(dst, src, ab[0], ab[1])
		for i, x := range src {
			want := exp32(float32(ab[0]*x) - ab[1])
			require.Truef(t, sameBits(want, dst[i]), "a %v b %v x %v: %v, want %v", ab[0], ab[1], x, dst[i], want)
		}
	}
}
