package kernels

import (
	"fmt"
	"math/rand"
)

// Family "conv": the causal depthwise conv1d of the Gated DeltaNet layers.

// KDepthwiseConv1d is a valid (unpadded) depthwise cross-correlation over time:
// x [B, T, C], w [C, K] -> out [B, T-K+1, C], out[b,t,c] = sum_j w[c,j] * x[b,t+j,c].
// Args x, w, out; no Params (the sizes come from the layouts). x and w must be contiguous
// (any offset) and share out's dtype. Accumulation is in float32, j = 0..K-1 in order,
// on both twins; the MSL twin has float32, float16 and bfloat16 entries.
var KDepthwiseConv1d = Register(&Kernel{Name: "depthwise_conv1d", Family: "conv",
	CPU: depthwiseConv1dCPU, Encode: depthwiseConv1dEncode})

// convDims reads B, T, C, K and the output length from a conv launch.
func convDims(l *Launch) (b, t, c, k, tout int) {
	x, w := &l.Args[0].Layout, &l.Args[1].Layout
	if x.NDim != 3 || w.NDim != 2 || w.Shape[0] != x.Shape[2] || x.Shape[1] < w.Shape[1] || w.Shape[1] < 1 {
		panic(fmt.Sprintf("kernels: depthwise_conv1d: x %v, w %v", x.Dims(), w.Dims()))
	}
	b, t, c, k = x.Shape[0], x.Shape[1], x.Shape[2], w.Shape[1]
	return b, t, c, k, t - k + 1
}

// convRow writes one output row of the float32 depthwise conv: out[c] = sum over j in
// order of w[c*k+j] * xs[j*C+c], C = len(out), xs the k input rows (gdn_block's conv
// step takes it too, so both sum alike).
func convRow(out, w, xs []float32, k int) {
	nc := len(out)
	if k == 4 { // the model's kernel size: no inner loop
		x0, x1, x2, x3 := xs[:nc], xs[nc:2*nc], xs[2*nc:3*nc], xs[3*nc:4*nc]
		for c := range out {
			wc := w[c*4 : c*4+4 : c*4+4]
			var acc float32
			acc += wc[0] * x0[c]
			acc += wc[1] * x1[c]
			acc += wc[2] * x2[c]
			acc += wc[3] * x3[c]
			out[c] = acc
		}
		return
	}
	for c := range out {
		wc := w[c*k : c*k+k]
		var acc float32
		for j, wj := range wc {
			acc += wj * xs[j*nc+c]
		}
		out[c] = acc
	}
}

func depthwiseConv1dCPU(l *Launch) {
	nb, nt, nc, nk, tout := convDims(l)
	x, w, o := &l.Args[0], &l.Args[1], l.Out()
	xv, wv, ov := F32(x.Data), F32(w.Data), F32(o.Data)
	xo, wo, oo := x.Offset, w.Offset, o.Offset
	if x.DType != Float32 || w.DType != Float32 || o.DType != Float32 {
		depthwiseConv1dHalf(l, nb, nt, nc, nk, tout)
		return
	}
	xv, wv, ov = xv[xo:xo+nb*nt*nc], wv[wo:wo+nc*nk], ov[oo:oo+nb*tout*nc]
	l.Helper.splitRows(nb*tout, nc*nk, func(r0, r1 int) {
		for r := r0; r < r1; r++ {
			b, t := r/tout, r%tout
			// The K input rows of this output row.
			convRow(ov[r*nc:][:nc], wv, xv[(b*nt+t)*nc:][:nk*nc], nk)
		}
	})
}

// convHalfRows is the output rows a half-type conv widens and narrows at a time: its
// inputs and outputs stay in L2, not a prefill's whole activations in fresh scratch.
const convHalfRows = 16

// depthwiseConv1dHalf is depthwiseConv1dCPU for half types: inputs widened to
// float32 (exact), the same arithmetic, rounded once to o's dtype, like the MSL twin,
// block by block of output rows.
func depthwiseConv1dHalf(l *Launch, nb, nt, nc, nk, tout int) {
	x, w, o := &l.Args[0], &l.Args[1], l.Out()
	wp := getScratchDirty(nc * nk)
	defer putScratch(wp)
	wv := *wp
	widenF32(wv, w, w.Offset)
	l.Helper.splitRows(nb*tout, nc*nk, func(r0, r1 int) {
		buf := getScratchDirty((2*convHalfRows + nk - 1) * nc)
		defer putScratch(buf)
		for a := r0; a < r1; {
			b, t := a/tout, a%tout
			e := min(r1, a+convHalfRows, (b+1)*tout) // one batch row's outputs at a time
			xin := (*buf)[:(e-a+nk-1)*nc]
			widenF32(xin, x, x.Offset+(b*nt+t)*nc)
			out := (*buf)[(convHalfRows+nk-1)*nc:][:(e-a)*nc]
			for j := 0; j < e-a; j++ {
				convRow(out[j*nc:][:nc], wv, xin[j*nc:][:nk*nc], nk)
			}
			narrowF32(o, o.Offset+a*nc, out)
			a = e
		}
	})
}

// convConsts is the conv twin's setBytes struct: its sizes (convDims).
type convConsts struct{ B, T, C, K, Tout int }

func depthwiseConv1dEncode(l *Launch, e Encoder) {
	nb, nt, nc, nk, tout := convDims(l)
	o := l.Out()
	e.Entry("depthwise_conv1d_" + o.DType.String())
	e.SetArg(0, &l.Args[0])
	e.SetArg(1, &l.Args[1])
	e.SetArg(2, o)
	e.SetBytes(3, mslPack(&convConsts{nb, nt, nc, nk, tout}))
	e.DispatchThreads(Groups1DFor(nb*tout*nc, e))
}

func init() { RegisterSamples("conv", convSamples) }

// convSamples covers the decode shape (T = K), a prefill shape with odd sizes, K = 1 and
// the half entries.
func convSamples(rng *rand.Rand) []*Launch {
	type tc struct {
		dt         DType
		b, t, c, k int
	}
	cases := []tc{
		{Float32, 1, 4, 128, 4},
		{Float32, 2, 13, 37, 4},
		{Float32, 2, 6, 5, 3},
		{Float32, 1, 3, 9, 1},
		{Float16, 2, 7, 33, 4},
		{BFloat16, 1, 9, 40, 4},
		{BFloat16, 2, 40, 24, 4}, // blocks of convHalfRows across two batch rows
	}
	out := make([]*Launch, 0, len(cases))
	for _, s := range cases {
		l := &Launch{Kernel: KDepthwiseConv1d, NArgs: 3}
		l.Args[0] = NewArg(Contiguous(s.dt, s.b, s.t, s.c))
		l.Args[1] = NewArg(Contiguous(s.dt, s.c, s.k))
		l.Args[2] = NewArg(Contiguous(s.dt, s.b, s.t-s.k+1, s.c))
		Fill(rng, &l.Args[0], -2, 2)
		Fill(rng, &l.Args[1], -1, 1)
		Poison(&l.Args[2])
		out = append(out, l)
	}
	return out
}
