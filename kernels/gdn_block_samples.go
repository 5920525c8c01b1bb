package kernels

import (
	"math"
	"math/rand"
)

func init() { RegisterSamples("gdn_block", gdnBlockSamples) }

// gdnSample is one sample shape of the gdn_block family; masked lists the rows given
// a mask (nil: no mask argument), false entries being masked rows.
type gdnSample struct {
	p      GDNBlockParams
	masked []bool
}

// gdnSampleCases: the repro's decode step (Qwen3.5 projections, an all-valid mask, as
// the server path has), Qwen3-Next's grouped projections with a masked row, the
// generic Dk path (33) with K = 3 and no mask, and grouped projections with Hv = Hk.
var gdnSampleCases = []gdnSample{
	{GDNBlockParams{B: 1, H: 64, Hk: 2, Hv: 4, Dk: 16, Dv: 16, K: 4}, []bool{true}},
	{GDNBlockParams{B: 2, H: 32, Hk: 2, Hv: 4, Dk: 16, Dv: 8, K: 4, Grouped: true}, []bool{true, false}},
	{GDNBlockParams{B: 3, H: 24, Hk: 1, Hv: 2, Dk: 33, Dv: 5, K: 3}, nil},
	{GDNBlockParams{B: 1, H: 20, Hk: 3, Hv: 3, Dk: 8, Dv: 4, K: 2, Grouped: true}, nil},
}

// gdnBlockSamples draws from its own fixed stream, not the caller's rng: Samples runs
// the families in name order on one rng, and drawing from it here would change the
// inputs of every family after this one in that order.
func gdnBlockSamples(*rand.Rand) []*Launch {
	rng := rand.New(rand.NewSource(0x9d))
	var out []*Launch
	for _, c := range gdnSampleCases {
		p := c.p
		p.Eps, p.QKEps = 1e-6, 1e-6/float64(p.Dk)
		p.QScale, p.KScale = 1/float64(p.Dk), 1/math.Sqrt(float64(p.Dk))
		p.Masked = c.masked != nil
		w := func(lo, hi float64, sh ...int) Arg { return randArg(rng, Contiguous(Float32, sh...), lo, hi) }
		nq, nz, nba := p.projRows()
		C := p.conC()
		x, norm := w(-1, 1, p.B, p.H), w(0.5, 1.5, p.H)
		var mask []Arg
		if c.masked != nil {
			m := NewArg(Contiguous(Bool, p.B))
			for b, v := range c.masked {
				m.Data[b] = gdByte(v) << (b % 2) // a true byte of 2 is true on both twins
			}
			mask = []Arg{m}
		}
		step := append([]Arg{x, norm, w(-0.3, 0.3, nq, p.H), w(-1, 1, p.B, p.K-1, C)}, mask...)
		step = append(step, NewArg(Contiguous(Float32, p.B, p.K, C)))
		ps := p
		out = append(out, launch(KGDNConvStep, &ps, step...))

		block := []Arg{x, norm, w(-1, 1, p.B, p.K, C), w(-0.5, 0.5, C, p.K),
			w(-0.3, 0.3, nz, p.H), w(-0.3, 0.3, nba, p.H), w(-0.3, 0.3, nba, p.H),
			w(-1.5, -0.1, p.Hv), w(-1, 1, p.Hv), w(-0.5, 0.5, p.B, p.Hv, p.Dv, p.Dk),
			w(0.5, 1.5, p.Dv), w(-0.3, 0.3, p.H, p.valueDim())}
		block = append(block, mask...)
		block = append(block, NewArg(Contiguous(Float32, p.B*p.H+p.B*p.Hv*p.Dv*p.Dk)))
		pb := p
		out = append(out, launch(KGDNBlock, &pb, block...))
	}
	return out
}
