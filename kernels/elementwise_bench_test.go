package kernels_test

import (
	"math/rand"
	"testing"

	"github.com/ingotml/ingot/kernels"
)

// BenchmarkElementwise64 times the Go twins of the elementwise ops the decode loop runs
// on 64-element float32 rows (kernel only, no graph): ns per launch.
func BenchmarkElementwise64(b *testing.B) {
	rng := rand.New(rand.NewSource(1))
	row := kernels.Contiguous(kernels.Float32, 1, 64)
	arg := func() kernels.Arg {
		a := kernels.NewArg(row)
		kernels.Fill(rng, &a, -2, 2)
		return a
	}
	one := kernels.NewArg(kernels.Contiguous(kernels.Float32))
	kernels.Fill(rng, &one, 1, 2)
	one.Layout = kernels.BroadcastLayout(&one.Layout, &row)
	cases := []struct {
		name string
		l    kernels.Launch
	}{
		{"add", kernels.Launch{Kernel: kernels.BinaryKernel(kernels.OpAdd), NArgs: 3, Args: [kernels.MaxArgs]kernels.Arg{arg(), arg(), arg()}}},
		{"mul_scalar", kernels.Launch{Kernel: kernels.BinaryKernel(kernels.OpMul), NArgs: 3, Args: [kernels.MaxArgs]kernels.Arg{arg(), one, arg()}}},
		{"silu", kernels.Launch{Kernel: kernels.UnaryKernel(kernels.OpSilu), NArgs: 2, Args: [kernels.MaxArgs]kernels.Arg{arg(), arg()}}},
		{"sigmoid", kernels.Launch{Kernel: kernels.UnaryKernel(kernels.OpSigmoid), NArgs: 2, Args: [kernels.MaxArgs]kernels.Arg{arg(), arg()}}},
		{"where", kernels.Launch{Kernel: kernels.KWhere, NArgs: 4, Args: [kernels.MaxArgs]kernels.Arg{
			func() kernels.Arg {
				c := kernels.NewArg(kernels.Contiguous(kernels.Bool, 1, 64))
				kernels.Fill(rng, &c, 0, 1)
				return c
			}(),
			arg(), arg(), arg()}}},
	}
	for _, c := range cases {
		l := c.l
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; i < b.N; i++ {
				kernels.Run(&l)
			}
		})
	}
}
