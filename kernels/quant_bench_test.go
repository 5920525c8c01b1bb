package kernels_test

import (
	"fmt"
	"math/rand"
	"testing"

	"github.com/ingotml/ingot/kernels"
)

// BenchmarkQuantGEMV measures decode-time matrix-vector products on the CPU twin: the
// quantized qmv at 4, 6 and 8 bits (group 64, float16 scales as mlx-community ships them)
// against the float32 linear kernel on the same [N, K], built in the same run. The
// reported MB/s is bytes of weights read per second: packed codes plus scales and
// biases for qmv, the float32 matrix for linear.
func BenchmarkQuantGEMV(b *testing.B) {
	rng := rand.New(rand.NewSource(1))
	for _, size := range []struct {
		name string
		n, k int
	}{{"golden128x64", 128, 64}, {"layer2048x2048", 2048, 2048}} {
		x := kernels.NewArg(kernels.Contiguous(kernels.Float32, 1, size.k))
		kernels.Fill(rng, &x, -1, 1)
		b.Run(size.name+"/f32", func(b *testing.B) {
			w := kernels.NewArg(kernels.Contiguous(kernels.Float32, size.n, size.k))
			kernels.Fill(rng, &w, -1, 1)
			l := &kernels.Launch{Kernel: kernels.KLinear, NArgs: 3,
				Params: &kernels.MatmulParams{Batch: 1, M: 1, N: size.n, K: size.k}}
			l.Args[0], l.Args[1], l.Args[2] = x, w, kernels.NewArg(kernels.Contiguous(kernels.Float32, 1, size.n))
			b.SetBytes(int64(len(w.Data)))
			for b.Loop() {
				kernels.Run(l)
			}
		})
		for _, bits := range []int{4, 6, 8} {
			b.Run(fmt.Sprintf("%s/q%d", size.name, bits), func(b *testing.B) {
				words, groups, err := kernels.CheckQuant(size.k, bits, 64)
				if err != nil {
					b.Fatal(err)
				}
				w := kernels.NewArg(kernels.Contiguous(kernels.UInt32, size.n, words))
				for i := range kernels.U32(w.Data) {
					kernels.U32(w.Data)[i] = rng.Uint32()
				}
				s := kernels.NewArg(kernels.Contiguous(kernels.Float16, size.n, groups))
				bs := kernels.NewArg(kernels.Contiguous(kernels.Float16, size.n, groups))
				kernels.Fill(rng, &s, -0.01, 0.01)
				kernels.Fill(rng, &bs, -0.1, 0.1)
				l := &kernels.Launch{Kernel: kernels.KQMV, NArgs: 5,
					Params: &kernels.QuantParams{M: 1, N: size.n, K: size.k, Bits: bits, Group: 64}}
				l.Args[0], l.Args[1], l.Args[2], l.Args[3] = x, w, s, bs
				l.Args[4] = kernels.NewArg(kernels.Contiguous(kernels.Float32, 1, size.n))
				b.SetBytes(int64(len(w.Data) + len(s.Data) + len(bs.Data)))
				for b.Loop() {
					kernels.Run(l)
				}
			})
		}
	}
}

// BenchmarkQuantQMM measures the prefill product (qmm, 16 x rows) on the CPU twin at
// 4 and 6 bits against float32 linear on the same [2048, 2048]; MB/s counts the
// weights' bytes once per launch.
func BenchmarkQuantQMM(b *testing.B) {
	const m, n, k = 16, 2048, 2048
	rng := rand.New(rand.NewSource(2))
	x := kernels.NewArg(kernels.Contiguous(kernels.Float32, m, k))
	kernels.Fill(rng, &x, -1, 1)
	b.Run("f32", func(b *testing.B) {
		w := kernels.NewArg(kernels.Contiguous(kernels.Float32, n, k))
		kernels.Fill(rng, &w, -1, 1)
		l := &kernels.Launch{Kernel: kernels.KLinear, NArgs: 3,
			Params: &kernels.MatmulParams{Batch: 1, M: m, N: n, K: k}}
		l.Args[0], l.Args[1], l.Args[2] = x, w, kernels.NewArg(kernels.Contiguous(kernels.Float32, m, n))
		b.SetBytes(int64(len(w.Data)))
		for b.Loop() {
			kernels.Run(l)
		}
	})
	for _, bits := range []int{4, 6} {
		b.Run(fmt.Sprintf("q%d", bits), func(b *testing.B) {
			words, groups, err := kernels.CheckQuant(k, bits, 64)
			if err != nil {
				b.Fatal(err)
			}
			w := kernels.NewArg(kernels.Contiguous(kernels.UInt32, n, words))
			for i := range kernels.U32(w.Data) {
				kernels.U32(w.Data)[i] = rng.Uint32()
			}
			s := kernels.NewArg(kernels.Contiguous(kernels.Float16, n, groups))
			bs := kernels.NewArg(kernels.Contiguous(kernels.Float16, n, groups))
			kernels.Fill(rng, &s, -0.01, 0.01)
			kernels.Fill(rng, &bs, -0.1, 0.1)
			l := &kernels.Launch{Kernel: kernels.KQMM, NArgs: 5,
				Params: &kernels.QuantParams{M: m, N: n, K: k, Bits: bits, Group: 64}}
			l.Args[0], l.Args[1], l.Args[2], l.Args[3] = x, w, s, bs
			l.Args[4] = kernels.NewArg(kernels.Contiguous(kernels.Float32, m, n))
			b.SetBytes(int64(len(w.Data) + len(s.Data) + len(bs.Data)))
			for b.Loop() {
				kernels.Run(l)
			}
		})
	}
}
