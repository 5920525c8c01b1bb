package kernels

import "math"

// The 16-lane order of 4- and 8-bit codes: the definition every path computes for a
// row dotted with x at these widths (the common ones, which the AVX-512 kernels of
// quant16b4_amd64.s and quant16b8_amd64.s compute). 2, 3, 5 and 6 bits keep qGroupDot's
// four-lane order (quant.go).
//
// A group of G codes (G a multiple of 32) is read as G/32 chunks of 32 codes, and
// each chunk as two 16-lane vectors a and b, lane l holding
//
//   - 4 bits: a = code 2l, b = code 2l+1 of the chunk (byte l's low and high nibble);
//   - 8 bits: a = code l, b = code 16+l (bytes l and 16+l).
//
// Lane l of the group's partial p starts at x*q of the first chunk's a (rounded to
// float32) and then takes p = fma(x, q, p) for its b, and for a then b of every
// later chunk: a fused multiply-add rounded once (fma32; VFMADD on the hardware).
// Then acc[g mod 2][l] = fma(scale, p[l], acc[g mod 2][l]) for every lane, groups in
// order: even and odd groups accumulate apart (two independent chains of fused
// adds). The biases go to 16 lanes of their own by group: bl[g mod 16] = fma(bias_g,
// sum_g, bl[g mod 16]) (sum_g the four-lane qSum of x's group g), groups in order.
// All start at 0. Finally lane l is (acc[0][l] + acc[1][l]) + bl[l], and the row's
// value is reduce16 of the lanes, which folds lanes l+8, then l+4, l+2, l+1 onto lane
// l (qReduce16). The fast path keeps the lanes in zmm registers: it unpacks 32 codes
// with one shift, needs no horizontal sum per group, and takes 16 groups' biases in
// one multiply-add.

// qLanes16 reports whether bits-bit codes use the 16-lane order.
func qLanes16(bits int) bool { return bits == 4 || bits == 8 }

// qLane16 returns the codes (within a 32-code chunk) lane l adds: first a, then b.
func qLane16(bits, l int) (a, b int) {
	if bits == 4 {
		return 2 * l, 2*l + 1
	}
	return l, 16 + l
}

// qCode16 is code k of a packed 4- or 8-bit row, as float32 (exact).
func qCode16(p []byte, bits, k int) float32 {
	if bits == 4 {
		return float32(p[k/2] >> (4 * (k & 1)) & 15)
	}
	return float32(p[k])
}

// dot16 is row r dotted with x (group sums sums) in the 16-lane order: the
// definition at 4 and 8 bits (qMatrix.dot calls it), written for clarity.
func (m *qMatrix) dot16(x, sums []float32, r int) float32 {
	p := m.raw[r*m.rowBytes : (r+1)*m.rowBytes]
	var acc [2][16]float32
	var bl [16]float32
	for g := 0; g < m.groups; g++ {
		var lanes [16]float32
		for c := g * m.group; c < (g+1)*m.group; c += 32 {
			for l := range lanes {
				a, b := qLane16(m.bits, l)
				if c == g*m.group {
					lanes[l] = float32(x[c+a] * qCode16(p, m.bits, c+a)) // rounded: no FMA
				} else {
					lanes[l] = fma32(x[c+a], qCode16(p, m.bits, c+a), lanes[l])
				}
				lanes[l] = fma32(x[c+b], qCode16(p, m.bits, c+b), lanes[l])
			}
		}
		s, b := m.scaleBias(r, g)
		a := &acc[g%2]
		for l := range a {
			a[l] = fma32(s, lanes[l], a[l])
		}
		bl[g%16] = fma32(b, sums[g], bl[g%16])
	}
	for l := range bl {
		bl[l] = (acc[0][l] + acc[1][l]) + bl[l]
	}
	return qReduce16(&bl)
}

// fma32 is a*b + c rounded once to float32, as the hardware's fused multiply-add
// computes it (Go's math.FMA is float64 only, and rounding its result again to
// float32 can differ). The product is exact in float64 (24 + 24 bits), and the float64
// sum s = p + c with its exact error e (TwoSum) is the exact result s + e. float32(s)
// rounds s + e correctly unless s lies exactly halfway between two float32 values
// while e is not 0; then the exact result is on e's side of s.
func fma32(a, b, c float32) float32 {
	p := float64(a) * float64(b)
	s := p + float64(c)
	r := float32(s)
	if math.IsInf(s, 0) || s != s {
		return r
	}
	bb := s - p
	e := (p - (s - bb)) + (float64(c) - bb)
	if e == 0 || float64(r) == s {
		return r
	}
	// r is s rounded to a neighbour; the other neighbour is on s's far side.
	o := math.Nextafter32(r, float32(math.Copysign(math.Inf(1), s-float64(r))))
	if s-float64(min(r, o)) != float64(max(r, o))-s {
		return r // not a midpoint
	}
	if (e > 0) == (float64(o) > s) {
		return o
	}
	return r
}

// qReduce16 folds lanes l+8, l+4, l+2, l+1 onto lane l in turn and returns lane 0
// (the order of the assembly's halving extracts).
func qReduce16(a *[16]float32) float32 {
	for n := 8; n >= 1; n /= 2 {
		for l := 0; l < n; l++ {
			a[l] += a[l+n]
		}
	}
	return a[0]
}

// qPermute16 writes x (a multiple of 32 long) to xp in the lane order of bits-bit
// codes: per 32-code chunk the 16 a-lane values, then the 16 b-lane values, so the
// assembly reads each as one vector.
func qPermute16(xp, x []float32, bits int) {
	if bits != 4 {
		copy(xp, x)
		return
	}
	xp = xp[:len(x)]
	for c := 0; c+32 <= len(x); c += 32 {
		xs, ps := x[c:c+32:c+32], xp[c:c+32:c+32]
		for l := range 16 {
			ps[l], ps[16+l] = xs[2*l], xs[2*l+1]
		}
	}
}
