package kernels_test

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/ingotml/ingot/kernels"
)

// BenchmarkGatedDeltaReal is one decode step of a Qwen3.5-0.8B GDN layer (Hk = Hv =
// 16, Dk = Dv = 128: a 1 MB state in, a 1 MB state out) with the state and output
// taken in turn from 32 copies (64 MB), so they come from memory as a decode step's
// do, on one core and with a helper goroutine taking heads ("2core"). The first
// sub-benchmark also pays the output copies' first-touch page faults.
func BenchmarkGatedDeltaReal(b *testing.B) {
	const hk, hv, dk, dv, copies = 16, 16, 128, 128, 32
	rng := rand.New(rand.NewSource(3))
	l := benchLaunch(kernels.KGatedDelta, []int{hv*dv + hv*dv*dk},
		[]int{1, 1, hk, dk}, []int{1, 1, hk, dk}, []int{1, 1, hv, dv},
		[]int{1, 1, hv}, []int{1, 1, hv}, []int{1, hv, dv, dk})
	kernels.Fill(rng, &l.Args[3], -1, -0.01)
	kernels.Fill(rng, &l.Args[4], 0, 1)
	states := make([][2]kernels.Arg, copies)
	for i := range states {
		states[i][0] = kernels.NewArg(l.Args[5].Layout)
		kernels.Fill(rng, &states[i][0], -0.5, 0.5)
		states[i][1] = kernels.NewArg(l.Args[6].Layout)
	}
	for _, cores := range []int{1, 2} {
		b.Run(fmt.Sprintf("%dcore", cores), func(b *testing.B) {
			l.Helper = nil
			if cores == 2 {
				h := &kernels.Helper{}
				l.Helper = h
				stop := make(chan struct{})
				defer close(stop)
				go h.Serve(stop)
			}
			i := 0
			for b.Loop() {
				s := &states[i%copies]
				l.Args[5], l.Args[6] = s[0], s[1]
				kernels.Run(l)
				i++
			}
			b.SetBytes(2 * hv * dv * dk * 4)
		})
	}
}
