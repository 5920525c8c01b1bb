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

// TestSplitHalfAndSDPAMatchOneCore: a bfloat16 silu and conv and a prefill-sized sdpa
// split between the cores give the bits of one pass on one core.
func TestSplitHalfAndSDPAMatchOneCore(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	n := splitElems + 4096*3 + 37
	a := NewArg(Contiguous(BFloat16, n))
	Fill(rng, &a, -6, 6)
	l := &Launch{Kernel: UnaryKernel(OpSilu), NArgs: 2}
	l.Args[0], l.Args[1] = a, NewArg(Contiguous(BFloat16, n))
	Run(l)
	wide := make([]float32, n)
	widenF32(wide, &a, 0)
	unaryF32(OpSilu, wide, wide)
	want := make([]uint16, n)
	narrowBF16(want, wide)
	require.Equal(t, want, U16(l.Out().Data), "bfloat16 silu")

	const nt, nc, nk = 300, 1024, 4
	c := &Launch{Kernel: KDepthwiseConv1d, NArgs: 3}
	c.Args[0], c.Args[1] = NewArg(Contiguous(BFloat16, 1, nt, nc)), NewArg(Contiguous(BFloat16, nc, nk))
	c.Args[2] = NewArg(Contiguous(BFloat16, 1, nt-nk+1, nc))
	Fill(rng, &c.Args[0], -2, 2)
	Fill(rng, &c.Args[1], -1, 1)
	require.GreaterOrEqual(t, (nt-nk+1)*nc*nk, splitElems)
	Run(c)
	xw, ww := make([]float32, nt*nc), make([]float32, nc*nk)
	widenF32(xw, &c.Args[0], 0)
	widenF32(ww, &c.Args[1], 0)
	of := make([]float32, (nt-nk+1)*nc)
	for r := 0; r < nt-nk+1; r++ {
		convRow(of[r*nc:][:nc], ww, xw[r*nc:][:nk*nc], nk)
	}
	wantConv := make([]uint16, len(of))
	narrowBF16(wantConv, of)
	require.Equal(t, wantConv, U16(c.Out().Data), "bfloat16 conv")

	const hq, hkv, sq, d = 4, 2, 70, 32
	s := &Launch{Kernel: KSDPA, Params: &SDPAParams{Scale: 0.2}, NArgs: 5}
	s.Args[0] = NewArg(Contiguous(Float32, 1, hq, sq, d))
	s.Args[1] = NewArg(Contiguous(Float32, 1, hkv, sq, d))
	s.Args[2] = NewArg(Contiguous(Float32, 1, hkv, sq, d))
	s.Args[3] = NewArg(Contiguous(Bool, 1, hq, sq, sq))
	s.Args[4] = NewArg(Contiguous(Float32, 1, hq, sq, d))
	for i := 0; i < 3; i++ {
		Fill(rng, &s.Args[i], -2, 2)
	}
	for i := 0; i < sq; i++ { // causal
		for j := 0; j <= i; j++ {
			for h := 0; h < hq; h++ {
				s.Args[3].Data[(h*sq+i)*sq+j] = 1
			}
		}
	}
	require.GreaterOrEqual(t, hq*sq*sq, sdpaSplitKeys)
	s.Helper = new(Helper) // nobody polls it: parallelWide starts its own goroutine
	Run(s)
	got := append([]float32(nil), F32(s.Out().Data)...)
	s.Helper = nil
	Poison(&s.Args[4])
	Run(s)
	wantS := F32(s.Out().Data)
	for i := range wantS {
		require.Truef(t, sameBits(wantS[i], got[i]), "sdpa: element %d: %v, want %v", i, got[i], wantS[i])
	}
}

// TestSplitCopyTransposes: a transposed view copied with its rows split between the
// cores lands every element where a plain transpose puts it.
func TestSplitCopyTransposes(t *testing.T) {
	const r, c = 300, 1024
	require.GreaterOrEqual(t, r*c, splitElems)
	src := NewArg(Contiguous(Float32, c, r))
	Fill(rand.New(rand.NewSource(5)), &src, -1, 1)
	view := src
	view.Layout = Contiguous(Float32, r, c)
	view.Strides[0], view.Strides[1] = 1, r // element (i, j) is src (j, i)
	l := &Launch{Kernel: KCopy, NArgs: 2}
	l.Args[0], l.Args[1] = view, NewArg(Contiguous(Float32, r, c))
	Run(l)
	got, s := F32(l.Out().Data), F32(src.Data)
	for i := 0; i < r; i++ {
		for j := 0; j < c; j++ {
			require.Equalf(t, s[j*r+i], got[i*c+j], "element (%d, %d)", i, j)
		}
	}
}

// TestSplitCopyHeads: the heads-first view of a [tokens, heads, dim] float32 array (two
// outer digits of the walk) copied, and cast to bfloat16, with its rows split between
// the cores: every element lands where a plain loop puts it, rounded as F32ToBF16.
func TestSplitCopyHeads(t *testing.T) {
	const nt, nh, d = 300, 4, 256
	require.GreaterOrEqual(t, nt*nh*d, splitElems)
	src := NewArg(Contiguous(Float32, nt, nh, d))
	Fill(rand.New(rand.NewSource(6)), &src, -1, 1)
	view := src
	view.Layout = Contiguous(Float32, nh, nt, d)
	view.Strides[0], view.Strides[1] = d, nh*d // element (h, i, j) is src (i, h, j)
	for _, dt := range []DType{Float32, BFloat16} {
		l := &Launch{Kernel: KCopy, NArgs: 2}
		l.Args[0], l.Args[1] = view, NewArg(Contiguous(dt, nh, nt, d))
		Run(l)
		s := F32(src.Data)
		for h := 0; h < nh; h++ {
			for i := 0; i < nt; i++ {
				for j := 0; j < d; j++ {
					want, o := s[(i*nh+h)*d+j], (h*nt+i)*d+j
					if dt == Float32 {
						require.Equalf(t, want, F32(l.Out().Data)[o], "element (%d, %d, %d)", h, i, j)
					} else {
						require.Equalf(t, F32ToBF16(want), U16(l.Out().Data)[o], "bfloat16 element (%d, %d, %d)", h, i, j)
					}
				}
			}
		}
	}
}
