package kernels_test

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/kernels"
)

// sdpaRef is naive float64 attention over dense copies of the (strided) inputs. An
// output's error scales with the largest |v| among the attended keys.
func sdpaRef(l *kernels.Launch) ref {
	qa, ka, va := &l.Args[0], &l.Args[1], &l.Args[2]
	q, k, v := dense(qa), dense(ka), dense(va)
	var m []float64
	if l.NArgs == 5 {
		m = dense(&l.Args[3])
	}
	B, Hq, Sq, D := qa.Shape[0], qa.Shape[1], qa.Shape[2], qa.Shape[3]
	Hkv, Skv, Dv := ka.Shape[1], ka.Shape[2], va.Shape[3]
	scale := l.Params.(*kernels.SDPAParams).Scale
	var r ref
	for b := 0; b < B; b++ {
		for h := 0; h < Hq; h++ {
			kh := b*Hkv + h/(Hq/Hkv)
			for i := 0; i < Sq; i++ {
				qr := q[((b*Hq+h)*Sq+i)*D:][:D]
				s := make([]float64, Skv)
				mx := math.Inf(-1)
				for j := range s {
					if m != nil && m[((b*Hq+h)*Sq+i)*Skv+j] == 0 {
						s[j] = math.Inf(-1)
						continue
					}
					kr := k[(kh*Skv+j)*D:][:D]
					for d, x := range qr {
						s[j] += x * kr[d]
					}
					s[j] *= scale
					mx = max(mx, s[j])
				}
				out := make([]float64, Dv)
				vmax := 0.0
				if !math.IsInf(mx, -1) {
					sum := 0.0
					for j := range s {
						w := math.Exp(s[j] - mx)
						sum += w
						for d := range out {
							out[d] += w * v[(kh*Skv+j)*Dv+d]
							if w > 0 {
								vmax = max(vmax, math.Abs(v[(kh*Skv+j)*Dv+d]))
							}
						}
					}
					for d := range out {
						out[d] /= sum
					}
				}
				for _, o := range out {
					r.want = append(r.want, o)
					r.scale = append(r.scale, vmax)
				}
			}
		}
	}
	return r
}

// TestSDPATwins covers decode, causal prefill, GQA, odd head sizes, strided cache views
// and a fully masked row (exact zeros). Both twins within 8 float32 epsilons of the
// value magnitude (float32 scores, weights and weighted sums over up to 128 keys).
func TestSDPATwins(t *testing.T) {
	checkTwins(t, "sdpa", sdpaRef, 1e-6, 1e-6)
}

func TestSDPAFullyMaskedRowIsZero(t *testing.T) {
	for _, l := range kernels.Samples(rand.New(rand.NewSource(3)))["sdpa"] {
		if l.NArgs != 5 || l.Args[3].Strides[0] == 0 {
			continue // not a padding mask
		}
		got := goRun(l)
		per := l.Out().Size() / l.Out().Shape[0]
		require.Equal(t, make([]float64, per), got[per:], "batch row 1 attends to nothing")
		return
	}
	t.Fatal("no padding-mask sample")
}

// BenchmarkSDPA times the Go twin on a decode step: Sq 1, Skv 128, Hq 4, Hkv 2.
func BenchmarkSDPA(b *testing.B) {
	rng := rand.New(rand.NewSource(1))
	for _, d := range []int{16, 32} {
		b.Run(fmt.Sprintf("decode_D%d", d), func(b *testing.B) {
			l := &kernels.Launch{Kernel: kernels.KSDPA, Params: &kernels.SDPAParams{Scale: 1 / math.Sqrt(float64(d))}, NArgs: 4}
			for i, sh := range [][]int{{1, 4, 1, d}, {1, 2, 128, d}, {1, 2, 128, d}, {1, 4, 1, d}} {
				l.Args[i] = kernels.NewArg(kernels.Contiguous(kernels.Float32, sh...))
				kernels.Fill(rng, &l.Args[i], -1, 1)
			}
			b.ReportAllocs()
			for b.Loop() {
				kernels.Run(l)
			}
		})
	}
}
