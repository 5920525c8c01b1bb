package kernels_test

import (
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/kernels"
)

// normRef is the float64 RMS norm (gated when the kernel is), scaled per element by |y|:
// every step is a product, so float32 errors are relative.
func normRef(l *kernels.Launch) ref {
	gated := l.Kernel == kernels.KGatedRMSNorm
	x := dense(&l.Args[0])
	cols := l.Args[0].Shape[l.Args[0].NDim-1]
	var z, w []float64
	n := 2
	if gated {
		z = dense(&l.Args[1])
		n = 3
	}
	if l.NArgs == n+1 {
		w = dense(&l.Args[n-1])
	}
	eps := l.Params.(*kernels.NormParams).Eps
	var r ref
	for ri, xr := range rows(x, cols) {
		ss := 0.0
		for _, v := range xr {
			ss += v * v
		}
		s := 1 / math.Sqrt(ss/float64(cols)+eps)
		for c, v := range xr {
			y := v * s
			if w != nil {
				y *= w[c]
			}
			if gated {
				g := z[ri*cols+c]
				y *= g / (1 + math.Exp(-g))
			}
			r.want = append(r.want, y)
			r.scale = append(r.scale, math.Abs(y)+1e-30)
		}
	}
	return r
}

// TestRMSNormTwins covers rms_norm and gated_rms_norm, with and without weight: the Go
// twin within 6 float32 roundings (products of float32-rounded factors), the MSL twin
// within 16 epsilons (float sum of squares).
func TestRMSNormTwins(t *testing.T) {
	checkTwins(t, "norm", normRef, 4e-7, 2e-6)
}

func TestRMSNormInPlaceMatchesOutOfPlace(t *testing.T) {
	for _, l := range kernels.Samples(rand.New(rand.NewSource(2)))["norm"] {
		want := goRun(l)
		x := l.Args[0]
		x.Data = append([]byte(nil), x.Data...)
		l.Args[0], l.Args[l.NArgs-1] = x, x // out shares x's buffer, as after donation
		kernels.Run(l)
		require.Equal(t, want, dense(&l.Args[0]), "%s %v", l.Kernel.Name, x.Dims())
	}
}

// BenchmarkRMSNorm times the Go twin on one decode row of 64 (and a Qwen3.5 gated norm
// row set: 4 value heads of 16).
func BenchmarkRMSNorm(b *testing.B) {
	rng := rand.New(rand.NewSource(1))
	for _, c := range []struct {
		name  string
		k     *kernels.Kernel
		shape []int
	}{{"rms_1x64", kernels.KRMSNorm, []int{1, 64}}, {"gated_4x16", kernels.KGatedRMSNorm, []int{4, 16}}} {
		b.Run(c.name, func(b *testing.B) {
			l := &kernels.Launch{Kernel: c.k, Params: &kernels.NormParams{Eps: 1e-6}}
			add := func(a kernels.Arg) {
				kernels.Fill(rng, &a, -1, 1)
				l.Args[l.NArgs] = a
				l.NArgs++
			}
			add(kernels.NewArg(kernels.Contiguous(kernels.Float32, c.shape...)))
			if c.k == kernels.KGatedRMSNorm {
				add(kernels.NewArg(kernels.Contiguous(kernels.Float32, c.shape...)))
			}
			add(kernels.NewArg(kernels.Contiguous(kernels.Float32, c.shape[1])))
			add(kernels.NewArg(kernels.Contiguous(kernels.Float32, c.shape...)))
			b.ReportAllocs()
			for b.Loop() {
				kernels.Run(l)
			}
		})
	}
}
