package kernels

import (
	"math"
	"math/rand"
)

// RoPEParams is the parameter struct of KRoPE: rotate the first Dims (even) dims of each
// head with frequencies Base^(-2i/Dims).
type RoPEParams struct {
	Dims int
	Base float64
}

// KRoPE applies rotary position embeddings, rotate-half (NeoX) pairing: for i < Dims/2,
// theta = pos * Base^(-2i/Dims), out[i] = x[i] cos - x[i+Dims/2] sin and
// out[i+Dims/2] = x[i] sin + x[i+Dims/2] cos; dims from Dims on pass through.
// Args x (contiguous float32 [B, H, S, D]), offsets (contiguous int32 [B]), out. The
// position of x[b, :, s, :] is offsets[b] + s. The Go twin computes the angle in float64;
// the MSL twin in float, as MLX does (its angle error grows with the position). The
// output may reuse x's buffer: each pair is read before it is written.
var KRoPE = Register(&Kernel{Name: "rope", Family: "rope", CPU: ropeCPU, Encode: ropeEncode, Donates: true})

func init() { RegisterSamples("rope", ropeSamples) }

func ropeCPU(l *Launch) {
	xa, oa, out := &l.Args[0], &l.Args[1], &l.Args[2]
	mustFloat32("rope", xa, out)
	p := l.Params.(*RoPEParams)
	B, H, S, D := xa.Shape[0], xa.Shape[1], xa.Shape[2], xa.Shape[3]
	n := B * H * S * D
	if n == 0 {
		return
	}
	x := F32(xa.Data)[xa.Offset : xa.Offset+n]
	y := F32(out.Data)[out.Offset : out.Offset+n]
	offs := I32(oa.Data)[oa.Offset : oa.Offset+B]
	half := p.Dims / 2
	// Per-call scratch: frequencies and the cos/sin of one position (stack arrays for
	// head dims up to 512).
	var fbuf [256]float64
	var cbuf, sbuf [256]float32
	freq, cs, sn := fbuf[:0], cbuf[:0], sbuf[:0]
	if half > len(fbuf) {
		freq, cs, sn = make([]float64, 0, half), make([]float32, 0, half), make([]float32, 0, half)
	}
	freq, cs, sn = freq[:half], cs[:half], sn[:half]
	for i := range freq {
		freq[i] = float64(ropeInvFreq(p.Base, p.Dims, i))
	}
	for b := 0; b < B; b++ {
		for s := 0; s < S; s++ {
			// The angle is a float32 product of float32 factors, exactly as the MSL twin
			// forms it, so both twins rotate by the same angle (a float64 angle would
			// differ from it by ~1e-4 rad at positions in the thousands).
			pos := float32(offs[b] + int32(s))
			for i, f := range freq {
				si, ci := math.Sincos(float64(pos * float32(f)))
				cs[i], sn[i] = float32(ci), float32(si)
			}
			for h := 0; h < H; h++ {
				base := ((b*H+h)*S + s) * D
				xr, yr := x[base:base+D], y[base:base+D]
				x1, x2 := xr[:half], xr[half:2*half]
				y1, y2 := yr[:half], yr[half:2*half]
				for i := range x1 {
					a, c := x1[i], x2[i]
					y1[i] = a*cs[i] - c*sn[i]
					y2[i] = a*sn[i] + c*cs[i]
				}
				copy(yr[2*half:], xr[2*half:])
			}
		}
	}
}

// ropeInvFreq is base^(-2i/dims) rounded to float32: both twins take their frequencies
// from here (the MSL twin through its parameter block).
func ropeInvFreq(base float64, dims, i int) float32 {
	return float32(math.Pow(base, -2*float64(i)/float64(dims)))
}

// ropeConsts is rope's setBytes struct: x's sizes and RoPEParams.Dims (the
// frequencies travel as their own block).
type ropeConsts struct {
	B, H, S, D int
	Dims       int `msl:"dims"`
}

func ropeEncode(l *Launch, e Encoder) {
	xa, oa, out := &l.Args[0], &l.Args[1], &l.Args[2]
	p := l.Params.(*RoPEParams)
	B, H, S, D := xa.Shape[0], xa.Shape[1], xa.Shape[2], xa.Shape[3]
	e.Entry("rope_float32")
	e.SetArg(0, xa)
	e.SetArg(1, oa)
	e.SetArg(2, out)
	mp := ropeConsts{B: B, H: H, S: S, D: D, Dims: p.Dims}
	e.SetBytes(3, mslPack(&mp))
	// The frequencies travel as their own constant block, exactly dims/2 long: setBytes
	// takes up to 4096 bytes, so up to 1024 of them (the encoder refuses more).
	inv := make([]float32, max(p.Dims/2, 1)) // one unused entry when nothing rotates
	for i := range inv {
		inv[i] = ropeInvFreq(p.Base, p.Dims, i)
	}
	e.SetBytes(4, mslFloats(inv))
	// One thread per rotated pair or passed-through element of each (b, h, s) row.
	slots := D - p.Dims/2
	e.DispatchThreads([3]int{max(slots, 1), max(S, 1), max(B*H, 1)}, [3]int{LimitThreads(min(max(slots, 1), 64), e), 1, 1})
}

// ropeSamples covers the Qwen3.5 test shapes (D 32, 8 rotary dims; full rotation), 300 frequencies, per-row
// offsets up to 4000, and decode (S = 1).
func ropeSamples(rng *rand.Rand) []*Launch {
	var out []*Launch
	for _, c := range []struct{ B, H, S, D, Dims int }{
		{1, 4, 7, 32, 8}, {2, 2, 1, 32, 8}, {2, 3, 5, 16, 16}, {1, 1, 3, 64, 32},
		{1, 1, 2, 640, 600}, // more than 256 frequencies (the old parameter block held 256)
	} {
		l := &Launch{Kernel: KRoPE, Params: &RoPEParams{Dims: c.Dims, Base: 10000}, NArgs: 3}
		l.Args[0] = NewArg(Contiguous(Float32, c.B, c.H, c.S, c.D))
		Fill(rng, &l.Args[0], -1, 1)
		l.Args[1] = NewArg(Contiguous(Int32, c.B))
		Fill(rng, &l.Args[1], 0, 4000)
		l.Args[2] = NewArg(Contiguous(Float32, c.B, c.H, c.S, c.D))
		Poison(&l.Args[2])
		out = append(out, l)
	}
	return out
}
