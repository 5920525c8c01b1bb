package kernels

import (
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSplitRowsMatchesOneCore runs the row-wise and elementwise kernels that split a
// prefill chunk between the cores (splitRows) on sizes past splitElems, and checks
// every value against the same loops run on one core, bit for bit: the RMS norm and
// the gated one (each row as its own launch), silu and a binary product over a length
// that ends in a vector tail (the loops called once over the whole array), and the
// depthwise conv (its row loop).
func TestSplitRowsMatchesOneCore(t *testing.T) {
	rng := rand.New(rand.NewSource(7))
	const rows, cols = 300, 1024
	require.GreaterOrEqual(t, rows*cols, splitElems)
	arg := func(shape ...int) Arg {
		a := NewArg(Contiguous(Float32, shape...))
		Fill(rng, &a, -3, 3)
		return a
	}
	for _, k := range []*Kernel{KRMSNorm, KGatedRMSNorm} {
		l := &Launch{Kernel: k, Params: &NormParams{Eps: 1e-6}}
		l.Args[0], l.NArgs = arg(rows, cols), 1
		if k == KGatedRMSNorm {
			l.Args[1], l.NArgs = arg(rows, cols), 2
		}
		l.Args[l.NArgs] = arg(cols)
		l.Args[l.NArgs+1] = arg(rows, cols)
		l.NArgs += 2
		Run(l)
		got := append([]float32(nil), F32(l.Out().Data)...)
		for r := 0; r < rows; r++ { // one row a launch: below splitElems
			one := *l
			for i := 0; i < one.NArgs; i++ {
				if one.Args[i].Size() == rows*cols {
					one.Args[i].Layout = Contiguous(Float32, 1, cols)
					one.Args[i].Offset = r * cols
				}
			}
			Run(&one)
		}
		want := F32(l.Out().Data)
		for i := range want {
			require.Truef(t, sameBits(want[i], got[i]), "%s: element %d: %v, want %v", k.Name, i, got[i], want[i])
		}
	}
	n := rows*cols + 37
	a, b := arg(n), arg(n)
	for _, k := range []*Kernel{UnaryKernel(OpSilu), BinaryKernel(OpMul)} {
		l := &Launch{Kernel: k}
		l.Args[0] = a
		want := make([]float32, n)
		if k == UnaryKernel(OpSilu) {
			l.Args[1], l.NArgs = NewArg(Contiguous(Float32, n)), 2
			unaryF32(OpSilu, F32(a.Data), want)
		} else {
			l.Args[1], l.Args[2], l.NArgs = b, NewArg(Contiguous(Float32, n)), 3
			binaryF32(OpMul, F32(a.Data), F32(b.Data), want)
		}
		Run(l)
		got := F32(l.Out().Data)
		for i := range want {
			require.Truef(t, sameBits(want[i], got[i]), "%s: element %d: %v, want %v", k.Name, i, got[i], want[i])
		}
	}
	const nt, nc, nk = 400, 1024, 4
	l := &Launch{Kernel: KDepthwiseConv1d, NArgs: 3}
	l.Args[0], l.Args[1], l.Args[2] = arg(1, nt, nc), arg(nc, nk), NewArg(Contiguous(Float32, 1, nt-nk+1, nc))
	Run(l)
	got, want := F32(l.Out().Data), make([]float32, (nt-nk+1)*nc)
	for r := 0; r < nt-nk+1; r++ {
		convRow(want[r*nc:][:nc], F32(l.Args[1].Data), F32(l.Args[0].Data)[r*nc:][:nk*nc], nk)
	}
	for i := range want {
		require.Truef(t, sameBits(want[i], got[i]), "conv: element %d: %v, want %v", i, got[i], want[i])
	}
}
