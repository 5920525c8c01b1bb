package kernels

import (
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestGdHead512MatchesSteps checks the interleaved chunk path (gdHead512) against
// gdStep run step after step, bit for bit: y of every step and the final state, at
// key sizes 4 to 128 (16: the repro model's gdStep16), value sizes 16 to 128 (one and several row blocks), masked
// steps (first, middle, all) and special values in the state and the inputs.
func TestGdHead512MatchesSteps(t *testing.T) {
	if !useAVX512 {
		t.Skip("no AVX-512: the interleaved path does not run")
	}
	rng := rand.New(rand.NewSource(512))
	special := []float32{float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 0, float32(math.Copysign(0, -1)), 1e-40, 3e38}
	fill := func(n int, spec bool) []float32 {
		a := make([]float32, n)
		for i := range a {
			a[i] = float32(rng.NormFloat64())
			if spec && rng.Intn(50) == 0 {
				a[i] = special[rng.Intn(len(special))]
			}
		}
		return a
	}
	for _, dk := range []int{4, 12, 16, 64, 128} {
		for _, dv := range []int{16, 48, 128} {
			for _, maskKind := range []string{"none", "first", "some", "all"} {
				nt := gdChunkMinSteps + rng.Intn(20)
				spec := rng.Intn(3) == 0
				src := fill(dv*dk, spec)
				ks, qs, vs := fill(nt*dk, spec), fill(nt*dk, spec), fill(nt*dv, spec)
				decays, betas := make([]float32, nt), make([]float32, nt)
				masked := make([]bool, nt)
				for i := range nt {
					decays[i] = float32(math.Exp(-rng.Float64()))
					betas[i] = float32(rng.Float64())
					switch maskKind {
					case "first":
						masked[i] = i == 0
					case "some":
						masked[i] = rng.Intn(3) == 0
					case "all":
						masked[i] = true
					}
				}
				// The reference: gdStep step after step, as gatedDeltaCPU ran every head.
				want, wantY := make([]float32, dv*dk), make([]float32, nt*dv)
				copy(want, src)
				for i := range nt {
					if masked[i] {
						continue
					}
					gdStep(want, want, ks[i*dk:(i+1)*dk], qs[i*dk:(i+1)*dk], vs[i*dv:(i+1)*dv], wantY[i*dv:(i+1)*dv], decays[i], betas[i])
				}
				got, gotY := make([]float32, dv*dk), make([]float32, nt*dv)
				for i := range gotY {
					gotY[i] = 7 // a masked step must clear its row
				}
				gdHead512(src, got, dk, dv, nt, func(i int) (bool, []float32, []float32, []float32, []float32, float32, float32) {
					y := gotY[i*dv : (i+1)*dv]
					if masked[i] {
						return false, nil, nil, nil, y, 0, 0
					}
					return true, ks[i*dk : (i+1)*dk], qs[i*dk : (i+1)*dk], vs[i*dv : (i+1)*dv], y, decays[i], betas[i]
				})
				for i := range want {
					require.Truef(t, sameBits(want[i], got[i]), "dk %d dv %d mask %s: state[%d] %v, want %v", dk, dv, maskKind, i, got[i], want[i])
				}
				for i := range wantY {
					require.Truef(t, sameBits(wantY[i], gotY[i]), "dk %d dv %d mask %s: y step %d row %d: %v, want %v", dk, dv, maskKind, i/dv, i%dv, gotY[i], wantY[i])
				}
			}
		}
	}
}
