package kernels_test

import (
	"fmt"
	"math/rand"
	"sync"
	"testing"

	"github.com/ingotml/ingot/internal/membw"
	"github.com/ingotml/ingot/kernels"
)

// probeOnce measures the machine's read bandwidth once per benchmark run.
var probeOnce = sync.OnceValue(func() float64 { return membw.Probe(1<<30, 0, 3) })

// realMatrices are the decode products of Qwen3.5-0.8B (hidden 1024, MLP 3584, vocab
// 248,320) and one expert of the 35B-A3B (hidden 2048, expert width 512): [N, K].
var realMatrices = []struct {
	name string
	n, k int
}{{"up1024x3584", 3584, 1024}, {"down3584x1024", 1024, 3584}, {"head1024x248320", 248320, 1024}, {"expert2048x512", 512, 2048}}

// BenchmarkRealGEMV measures one-row products (decode) at the real sizes above for
// every weight format the loader keeps: 4- and 8-bit quantized at groups 64 and 32
// (bfloat16 scales, as cmd/quantize writes for a bfloat16 model), and bfloat16,
// float16 and float32 weights. It reports the weights' bytes per second (GB/s) and
// that as a share of the read bandwidth membw.Probe measured in the same run
// (%probe). Each iteration takes the next of several copies of the weights (256 MB
// in all), so they stream from memory as a model's do. "/2core" runs the product with a helper goroutine taking work
// (Launch.Helper), as the CPU device's waiting graph does.
func BenchmarkRealGEMV(b *testing.B) {
	rng := rand.New(rand.NewSource(1))
	for _, size := range realMatrices {
		x := kernels.NewArg(kernels.Contiguous(kernels.Float32, 1, size.k))
		kernels.Fill(rng, &x, -1, 1)
		out := kernels.NewArg(kernels.Contiguous(kernels.Float32, 1, size.n))
		for _, f := range []struct {
			name        string
			bits, group int
			dt          kernels.DType
		}{{"q4g64", 4, 64, 0}, {"q4g32", 4, 32, 0}, {"q8g64", 8, 64, 0}, {"q8g32", 8, 32, 0},
			{"bf16", 0, 0, kernels.BFloat16}, {"f16", 0, 0, kernels.Float16}, {"f32", 0, 0, kernels.Float32}} {
			if f.bits == 0 && f.dt == kernels.Float32 && size.n*size.k > 1<<26 {
				continue // 1 GB: the format is not one a checkpoint of this size ships
			}
			var l *kernels.Launch
			var bytes int
			var copies [][3]kernels.Arg // the weights in turn, so they stream from memory
			if f.bits > 0 {
				w, s, bs := realQuant(rng, size.n, size.k, f.bits, f.group)
				l = &kernels.Launch{Kernel: kernels.KQMV, NArgs: 5,
					Params: &kernels.QuantParams{M: 1, N: size.n, K: size.k, Bits: f.bits, Group: f.group}}
				l.Args[0], l.Args[1], l.Args[2], l.Args[3], l.Args[4] = x, w, s, bs, out
				bytes = len(w.Data) + len(s.Data) + len(bs.Data)
				for range realCopies(bytes) {
					copies = append(copies, [3]kernels.Arg{realCopy(w), realCopy(s), realCopy(bs)})
				}
			} else {
				w := kernels.NewArg(kernels.Contiguous(f.dt, size.n, size.k))
				realFill(rng, &w)
				xd := x
				o := out
				if f.dt != kernels.Float32 { // linear computes in the weights' dtype
					xd = kernels.NewArg(kernels.Contiguous(f.dt, 1, size.k))
					kernels.Fill(rng, &xd, -1, 1)
					o = kernels.NewArg(kernels.Contiguous(f.dt, 1, size.n))
				}
				l = &kernels.Launch{Kernel: kernels.KLinear, NArgs: 3,
					Params: &kernels.MatmulParams{Batch: 1, M: 1, N: size.n, K: size.k}}
				l.Args[0], l.Args[1], l.Args[2] = xd, w, o
				bytes = len(w.Data)
				for range realCopies(bytes) {
					copies = append(copies, [3]kernels.Arg{realCopy(w)})
				}
			}
			for _, cores := range []int{1, 2} {
				b.Run(fmt.Sprintf("%s/%s/%dcore", size.name, f.name, cores), func(b *testing.B) {
					probe := probeOnce()
					l.Helper = nil
					if cores == 2 {
						h := &kernels.Helper{}
						l.Helper = h
						stop := make(chan struct{})
						defer close(stop)
						// Written out, not Helper.Serve: scripts/bench-real.sh runs this
						// file in older revisions too.
						go func() {
							for {
								select {
								case <-stop:
									return
								default:
									h.Help()
								}
							}
						}()
					}
					b.SetBytes(int64(bytes))
					i := 0
					for b.Loop() {
						c := &copies[i%len(copies)]
						if f.bits > 0 {
							l.Args[1], l.Args[2], l.Args[3] = c[0], c[1], c[2]
						} else {
							l.Args[1] = c[0]
						}
						kernels.Run(l)
						i++
					}
					gbs := float64(bytes) * float64(b.N) / b.Elapsed().Seconds()
					b.ReportMetric(gbs/1e9, "GB/s")
					b.ReportMetric(100*gbs/probe, "%probe")
				})
			}
		}
	}
}

// realCopies is how many copies of a matrix of n bytes make 256 MB (at least 1), far
// more than the caches hold.
func realCopies(n int) int { return max(1, (256<<20)/n) }

// realCopy is a copy of a's data in a new buffer.
func realCopy(a kernels.Arg) kernels.Arg {
	a.Data = append([]byte(nil), a.Data...)
	return a
}

// realQuant is a random [n, k] quantized matrix with bfloat16 scales and biases.
func realQuant(rng *rand.Rand, n, k, bits, group int) (w, s, bs kernels.Arg) {
	words, groups, err := kernels.CheckQuant(k, bits, group)
	if err != nil {
		panic(err)
	}
	w = kernels.NewArg(kernels.Contiguous(kernels.UInt32, n, words))
	rng.Read(w.Data)
	s = kernels.NewArg(kernels.Contiguous(kernels.BFloat16, n, groups))
	bs = kernels.NewArg(kernels.Contiguous(kernels.BFloat16, n, groups))
	kernels.Fill(rng, &s, -0.01, 0.01)
	kernels.Fill(rng, &bs, -0.1, 0.1)
	return w, s, bs
}

// realFill fills a (float32, float16 or bfloat16) with values in [-0.1, 0.1) from a
// small table (Fill is slow at half a billion elements).
func realFill(rng *rand.Rand, a *kernels.Arg) {
	t := kernels.NewArg(kernels.Contiguous(a.DType, 4096))
	kernels.Fill(rng, &t, -0.1, 0.1)
	es := a.DType.Size()
	for i := 0; i < len(a.Data); i += len(t.Data) {
		copy(a.Data[i:], t.Data[(i/es*7)%len(t.Data)/es*es:])
	}
}
