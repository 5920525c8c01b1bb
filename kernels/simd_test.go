package kernels

import (
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
)

// simdRandRow fills a row with values of mixed magnitude and, when special is set, a
// few zeros, negative zeros, subnormals, infinities and NaNs.
func simdRandRow(rng *rand.Rand, n int, special bool) []float32 {
	r := make([]float32, n)
	for i := range r {
		r[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.Intn(7)-3)))
		if special && rng.Intn(16) == 0 {
			r[i] = []float32{0, float32(math.Copysign(0, -1)), 1e-40, -3e-39,
				float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN())}[rng.Intn(7)]
		}
	}
	return r
}

// sameBits reports whether a and b are the same float32, NaNs of any payload equal.
func sameBits(a, b float32) bool {
	return math.Float32bits(a) == math.Float32bits(b) || (a != a && b != b)
}

// TestGemvMatchesMMDot checks gemvF32 (the assembly on amd64 with AVX) against mmDot,
// the definition, bit for bit: row counts around the 8-row block, K with and without a
// tail, padded row strides, special values.
func TestGemvMatchesMMDot(t *testing.T) {
	t.Logf("useAVX = %v", useAVX)
	rng := rand.New(rand.NewSource(7))
	for _, n := range []int{1, 7, 8, 9, 16, 31, 64, 192} {
		for _, k := range []int{0, 3, 4, 8, 13, 32, 64, 100} {
			for _, pad := range []int{0, 5} {
				for _, special := range []bool{false, true} {
					ld := k + pad
					x := simdRandRow(rng, k, special)
					w := simdRandRow(rng, max(0, (n-1)*ld+k), special)
					out := make([]float32, n)
					gemvF32(x, w, ld, out)
					for r := range out {
						want := mmDot(x, w[r*ld:r*ld+k])
						require.Truef(t, sameBits(want, out[r]), "n %d k %d ld %d row %d: %v, want %v", n, k, ld, r, out[r], want)
					}
				}
			}
		}
	}
}

// TestAxpyRowsMatchesLoop checks axpyRows against the plain key-by-key loop bit for bit,
// for widths around the 8- and 32-column blocks, zero weights included.
func TestAxpyRowsMatchesLoop(t *testing.T) {
	rng := rand.New(rand.NewSource(8))
	for _, d := range []int{1, 7, 8, 12, 16, 32, 40, 64, 70} {
		for _, n := range []int{0, 1, 5, 33} {
			ld := d + 3
			a := simdRandRow(rng, n, false)
			for j := range a {
				if rng.Intn(4) == 0 {
					a[j] = 0
				}
			}
			v := simdRandRow(rng, max(0, (n-1)*ld+d), false)
			y := simdRandRow(rng, d, false)
			want := append([]float32(nil), y...)
			for j := range a {
				if a[j] != 0 {
					for c := range want {
						want[c] += float32(a[j] * v[j*ld+c])
					}
				}
			}
			axpyRows(y, a, v, ld)
			for c := range y {
				require.Truef(t, sameBits(want[c], y[c]), "d %d n %d col %d: %v, want %v", d, n, c, y[c], want[c])
			}
		}
	}
}

// TestGDStep16MatchesGo checks the gated-delta step for Dk = 16 (the assembly on amd64
// with AVX) against gdStep16Go, the definition, bit for bit: state, outputs, special
// values, row counts from 0 to a few heads' worth.
func TestGDStep16MatchesGo(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	for _, n := range []int{0, 1, 3, 16, 37} {
		for _, special := range []bool{false, true} {
			for rep := 0; rep < 4; rep++ {
				s := simdRandRow(rng, n*16, special)
				k, q, v := simdRandRow(rng, 16, special), simdRandRow(rng, 16, special), simdRandRow(rng, n, special)
				decay, beta := float32(rng.Float64()), float32(rng.Float64())
				s2 := append([]float32(nil), s...)
				y, y2 := make([]float32, n), make([]float32, n)
				gdStep16(s, k, q, v, y, decay, beta)
				gdStep16Go(s2, k, q, v, y2, decay, beta)
				for i := range s {
					require.Truef(t, sameBits(s2[i], s[i]), "n %d special %v state %d: %v, want %v", n, special, i, s[i], s2[i])
				}
				for i := range y {
					require.Truef(t, sameBits(y2[i], y[i]), "n %d special %v y %d: %v, want %v", n, special, i, y[i], y2[i])
				}
			}
		}
	}
}

// TestGDStepMatchesGo checks the gated-delta step for other key sizes (the assembly
// on amd64 with AVX when Dk is a multiple of 4) against the definition, gdDecayDot
// then gdUpdateDot per row, bit for bit: state read from another buffer and in place,
// and streamed to a new one as a decode step does (gdStepStream), row counts around
// the four-row block, special values.
func TestGDStepMatchesGo(t *testing.T) {
	rng := rand.New(rand.NewSource(10))
	for _, dk := range []int{4, 12, 128, 6} {
		for _, n := range []int{1, 3, 4, 5, 9, 128} {
			for _, special := range []bool{false, true} {
				for _, inPlace := range []bool{false, true} {
					src := simdRandRow(rng, n*dk, special)
					k, q, v := simdRandRow(rng, dk, special), simdRandRow(rng, dk, special), simdRandRow(rng, n, special)
					decay, beta := float32(rng.Float64()), float32(rng.Float64())
					want := append([]float32(nil), src...)
					wantY := make([]float32, n)
					for i := range wantY {
						row := want[i*dk : i*dk+dk]
						delta := (v[i] - gdDecayDot(row, k, decay)) * beta
						wantY[i] = gdUpdateDot(row, k, q, delta)
					}
					s, y := make([]float32, n*dk), make([]float32, n)
					if inPlace {
						s = src
					}
					gdStep(s, src, k, q, v, y, decay, beta)
					for i := range s {
						require.Truef(t, sameBits(want[i], s[i]), "dk %d n %d special %v state %d: %v, want %v", dk, n, special, i, s[i], want[i])
					}
					for i := range y {
						require.Truef(t, sameBits(wantY[i], y[i]), "dk %d n %d special %v y %d: %v, want %v", dk, n, special, i, y[i], wantY[i])
					}
					if inPlace {
						continue
					}
					// A decode step's streamed state: 16-byte aligned (gdRowsNT) and not.
					for _, off := range []int{0, 1} {
						s, y := make([]float32, n*dk+off)[off:], make([]float32, n)
						gdStepStream(s, src, k, q, v, y, decay, beta)
						for i := range s {
							require.Truef(t, sameBits(want[i], s[i]), "stream dk %d n %d off %d special %v state %d: %v, want %v", dk, n, off, special, i, s[i], want[i])
						}
						for i := range y {
							require.Truef(t, sameBits(wantY[i], y[i]), "stream dk %d n %d off %d special %v y %d: %v, want %v", dk, n, off, special, i, y[i], wantY[i])
						}
					}
				}
			}
		}
	}
}

// TestBinaryF32MatchesGo checks the dense float32 add, sub and mul (the assembly on
// amd64 with AVX, eight lanes at a time, then a Go tail) against the per-element Go
// operation bit for bit, lengths around the 8-lane block, in place and not.
func TestBinaryF32MatchesGo(t *testing.T) {
	rng := rand.New(rand.NewSource(10))
	ops := map[*BinaryOp]func(x, y float32) float32{
		OpAdd: func(x, y float32) float32 { return x + y },
		OpSub: func(x, y float32) float32 { return x - y },
		OpMul: func(x, y float32) float32 { return x * y },
	}
	for op, f := range ops {
		for _, n := range []int{1, 7, 8, 9, 16, 63, 64, 70} {
			for _, inPlace := range []bool{false, true} {
				a := NewArg(Contiguous(Float32, n))
				b := NewArg(Contiguous(Float32, n))
				copy(F32(a.Data), simdRandRow(rng, n, true))
				copy(F32(b.Data), simdRandRow(rng, n, true))
				want := make([]float32, n)
				for i := range want {
					want[i] = f(F32(a.Data)[i], F32(b.Data)[i])
				}
				o := NewArg(Contiguous(Float32, n))
				if inPlace {
					o = a // the output is the left operand's buffer, as after donation
				}
				require.True(t, binaryF32Fast(op, &a, &b, &o, nil))
				for i, w := range want {
					require.Truef(t, sameBits(w, F32(o.Data)[i]), "%s n %d in-place %v element %d: %v, want %v",
						op.Name, n, inPlace, i, F32(o.Data)[i], w)
				}
			}
		}
	}
}
