package kernels_test

import (
	"math/rand"
	"testing"

	"github.com/ingotml/ingot/kernels"
)

// benchLaunch builds a float32 launch of kernel k with random inputs of the given shapes
// and an output of outShape.
func benchLaunch(k *kernels.Kernel, outShape []int, inShapes ...[]int) *kernels.Launch {
	rng := rand.New(rand.NewSource(1))
	l := &kernels.Launch{Kernel: k, NArgs: len(inShapes) + 1}
	for i, s := range inShapes {
		l.Args[i] = kernels.NewArg(kernels.Contiguous(kernels.Float32, s...))
		kernels.Fill(rng, &l.Args[i], -0.5, 0.5)
	}
	l.Args[len(inShapes)] = kernels.NewArg(kernels.Contiguous(kernels.Float32, outShape...))
	return l
}

func benchGatedDelta(b *testing.B, nb, t, hk, hv, dk, dv int) {
	l := benchLaunch(kernels.KGatedDelta, []int{nb*t*hv*dv + nb*hv*dv*dk},
		[]int{nb, t, hk, dk}, []int{nb, t, hk, dk}, []int{nb, t, hv, dv},
		[]int{nb, t, hv}, []int{nb, t, hv}, []int{nb, hv, dv, dk})
	// Model-like decays and gates keep a long prefill's state bounded.
	rng := rand.New(rand.NewSource(2))
	kernels.Fill(rng, &l.Args[3], -1, -0.01)
	kernels.Fill(rng, &l.Args[4], 0, 1)
	b.ReportAllocs()
	for b.Loop() {
		kernels.Run(l)
	}
}

// BenchmarkGatedDeltaDecode is the decode step of the repro model (run ~49 times per
// token): B = 1, T = 1, Hk = 2, Hv = 4, Dk = Dv = 16.
func BenchmarkGatedDeltaDecode(b *testing.B) { benchGatedDelta(b, 1, 1, 2, 4, 16, 16) }

// BenchmarkGatedDeltaPrefill100 is the repro's 100-token prompt through one layer.
func BenchmarkGatedDeltaPrefill100(b *testing.B) { benchGatedDelta(b, 1, 100, 2, 4, 16, 16) }

// BenchmarkGatedDeltaDecodeDk128 is a decode step at a published model's head size.
func BenchmarkGatedDeltaDecodeDk128(b *testing.B) { benchGatedDelta(b, 1, 1, 16, 32, 128, 128) }

// BenchmarkDepthwiseConv1dDecode is the decode conv of the repro model: C = 128 channels,
// K = 4, T = 4 (the K-1 state rows and the new token) -> one output row.
func BenchmarkDepthwiseConv1dDecode(b *testing.B) {
	l := benchLaunch(kernels.KDepthwiseConv1d, []int{1, 1, 128}, []int{1, 4, 128}, []int{128, 4})
	b.ReportAllocs()
	for b.Loop() {
		kernels.Run(l)
	}
}
