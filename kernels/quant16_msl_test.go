package kernels_test

import (
	"bytes"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/kernels"
	"github.com/ingotml/ingot/kernels/msltest"
)

// TestQuant16MSLBitExact: the MSL twin of qmm (one thread per output) at 4 and 8 bits
// computes the Go twin's 16-lane order bit for bit (C++17 contracts no product into an
// FMA), with a tail of groups past the last 16-group block, for float32 and bfloat16
// scales. (qmv's MSL twin spreads a row over a threadgroup for the GPU's bandwidth and
// adds in its own order: TestMSLMatchesGoTwin holds it to the catalog's tolerance.)
func TestQuant16MSLBitExact(t *testing.T) {
	msltest.RequireCompiler(t)
	src, err := kernels.Source("quant")
	require.NoError(t, err)
	sess := session(t, "quant", src)
	rng := rand.New(rand.NewSource(20))
	for _, k := range []*kernels.Kernel{kernels.KQMM} {
		for _, bits := range []int{4, 8} {
			for _, group := range []int{32, 64} {
				for _, dt := range []kernels.DType{kernels.Float32, kernels.BFloat16} {
					const m, n = 2, 5
					kk := group * 17
					w, s, b := realQuantDT(rng, n, kk, bits, group, dt)
					x := kernels.NewArg(kernels.Contiguous(kernels.Float32, m, kk))
					kernels.Fill(rng, &x, -1, 1)
					l := &kernels.Launch{Kernel: k, NArgs: 5, Params: &kernels.QuantParams{M: m, N: n, K: kk, Bits: bits, Group: group}}
					l.Args[0], l.Args[1], l.Args[2], l.Args[3] = x, w, s, b
					l.Args[4] = kernels.NewArg(kernels.Contiguous(kernels.Float32, m, n))
					g := clone(l)
					h := &harness{sess: sess, order: msltest.Orders[0], bufs: map[int][]byte{}}
					g.Kernel.Encode(g, h)
					require.NoError(t, h.err)
					kernels.Run(l)
					require.Truef(t, bytes.Equal(l.Args[4].Data, g.Args[4].Data), "%s bits %d group %d %s: Go %v, MSL %v",
						k.Name, bits, group, dt, kernels.F32(l.Args[4].Data), kernels.F32(g.Args[4].Data))
				}
			}
		}
	}
}

// realQuantDT is realQuant with scales and biases of dtype dt.
func realQuantDT(rng *rand.Rand, n, k, bits, group int, dt kernels.DType) (w, s, bs kernels.Arg) {
	words, groups, err := kernels.CheckQuant(k, bits, group)
	if err != nil {
		panic(err)
	}
	w = kernels.NewArg(kernels.Contiguous(kernels.UInt32, n, words))
	rng.Read(w.Data)
	s = kernels.NewArg(kernels.Contiguous(dt, n, groups))
	bs = kernels.NewArg(kernels.Contiguous(dt, n, groups))
	kernels.Fill(rng, &s, -0.01, 0.01)
	kernels.Fill(rng, &bs, -0.1, 0.1)
	return w, s, bs
}
