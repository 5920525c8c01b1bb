package kernels

import "math"

// exp32 is e^x in float32 arithmetic, the exponential of silu, sigmoid, switch_glu and
// sdpa (softmax keeps expF64: its x - max rounded to float32 would cost up to ~1e-6
// relative, and its rows are short). Maximum error under 1 ulp (see expMaxULP and
// TestExp32Error). Range: x < expLo (e^x below 2^-126, float32's smallest normal) gives
// 0, x > expHi gives +Inf (true results up to x = 88.72 are finite: the bound keeps 2^k
// a normal float32), NaN gives NaN.
//
// Method: k = round(x log2 e) by adding and subtracting 1.5*2^23, r = x - k ln2 in two
// parts (Cody-Waite, |r| <= ln2/2), e^r = 1 + r + r^2 P(r) with Cephes' degree-5
// minimax P, times 2^k built in the exponent bits. Every product is rounded before it is
// added (float32(...) forbids FMA), so expArray's assembly matches it bit for bit.
func exp32(x float32) float32 {
	if x != x {
		return x
	}
	if x > expHi {
		return float32(math.Inf(1))
	}
	if x < expLo {
		return 0
	}
	return expCore(x)
}

// expCore is exp32 for expLo <= x <= expHi.
func expCore(x float32) float32 {
	tm := float32(x*expLog2E) + expMagic
	kf := tm - expMagic
	r := x - float32(kf*expLn2Hi)
	r -= float32(kf * expLn2Lo)
	z := float32(r * r)
	p := float32(expP[0]*r) + expP[1]
	p = float32(p*r) + expP[2]
	p = float32(p*r) + expP[3]
	p = float32(p*r) + expP[4]
	p = float32(p*r) + expP[5]
	y := float32(p*z) + r + 1
	// tm's low mantissa bits hold k (offset by the magic's); (k + 127) << 23 is 2^k.
	return y * math.Float32frombits((math.Float32bits(tm)+127)<<23)
}

// The constants of exp32, as float32 bit patterns (simd_amd64.s uses the same bits).
var (
	expLo    = math.Float32frombits(0xc2aeac50) // -87.33655
	expHi    = math.Float32frombits(0x42b0c0a5) // 88.37626
	expLog2E = math.Float32frombits(0x3fb8aa3b)
	expMagic = math.Float32frombits(0x4b400000) // 1.5 * 2^23
	expLn2Hi = math.Float32frombits(0x3f318000) // 0.693359375, exact times any k
	expLn2Lo = math.Float32frombits(0xb95e8083) // ln2 - expLn2Hi
	expP     = [6]float32{
		math.Float32frombits(0x39506967), math.Float32frombits(0x3ab743ce),
		math.Float32frombits(0x3c088908), math.Float32frombits(0x3d2aa9c1),
		math.Float32frombits(0x3e2aaaaa), math.Float32frombits(0x3f000000),
	}
)

// expArray writes dst[i] = exp32(a*src[i] - b) for a = 1 or -1 (so a*src is exact):
// -x for silu and sigmoid, score - max for sdpa. len(dst) >= len(src).
func expArray(dst, src []float32, a, b float32) {
	n := len(src)
	dst = dst[:n]
	i := 0
	if useAVX2 && n >= 8 {
		i = n &^ 7
		expAVX2(&dst[0], &src[0], a, b, i/8)
	}
	for ; i < n; i++ {
		dst[i] = exp32(float32(a*src[i]) - b)
	}
}
