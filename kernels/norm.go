package kernels

import (
	"math"
	"math/rand"
)

// RMS normalisation over the last axis of a contiguous float32 input viewed as
// [rows, D]: y = x * rsqrt(mean(x^2) + eps) * w, and the gated form used by Qwen3.5's
// linear attention, y = rms_norm(x) * w * silu(z). The weight w ([D]) is optional: a
// launch without it has one argument fewer. Only float32 (the tensor ops cast). The sum
// of squares accumulates in float64 on the Go twin, in float on the MSL twin. The
// output may reuse x's buffer: each element is read before it is written.

// NormParams is the parameter struct of KRMSNorm and KGatedRMSNorm.
type NormParams struct{ Eps float64 }

// KRMSNorm: Args x, [w], out.
var KRMSNorm = Register(&Kernel{Name: "rms_norm", Family: "norm", CPU: rmsNormCPU,
	Encode: rmsNormEncode, Donates: true})

// KGatedRMSNorm: Args x, z (shaped like x), [w], out.
var KGatedRMSNorm = Register(&Kernel{Name: "gated_rms_norm", Family: "norm", CPU: gatedRMSNormCPU,
	Encode: gatedRMSNormEncode, Donates: true})

func init() { RegisterSamples("norm", normSamples) }

// normArgs splits a norm launch: x, the gate z (nil unless gated), the weight (nil if
// absent) and out.
func normArgs(l *Launch, gated bool) (x, z, w, o *Arg) {
	x, o = &l.Args[0], l.Out()
	n := 2
	if gated {
		z = &l.Args[1]
		n = 3
	}
	if l.NArgs == n+1 {
		w = &l.Args[n-1]
	}
	return x, z, w, o
}

func rmsNormCPU(l *Launch) { normCPU(l, false) }

func gatedRMSNormCPU(l *Launch) { normCPU(l, true) }

func normCPU(l *Launch, gated bool) {
	xa, za, wa, oa := normArgs(l, gated)
	mustFloat32(l.Kernel.Name, xa, oa)
	rows, cols := rowsCols(xa)
	n := rows * cols
	if n == 0 {
		return
	}
	eps := l.Params.(*NormParams).Eps
	x := F32(xa.Data)[xa.Offset : xa.Offset+n]
	y := F32(oa.Data)[oa.Offset : oa.Offset+n]
	var w, z []float32
	if wa != nil {
		mustFloat32(l.Kernel.Name, wa)
		w = F32(wa.Data)[wa.Offset : wa.Offset+cols]
	}
	if za != nil {
		mustFloat32(l.Kernel.Name, za)
		z = F32(za.Data)[za.Offset : za.Offset+n]
	}
	l.Helper.splitRows(rows, cols, func(r0, r1 int) {
		for r := r0; r < r1; r++ {
			xr, yr := x[r*cols:r*cols+cols], y[r*cols:r*cols+cols]
			s := rmsScale(xr, eps)
			switch {
			case w != nil:
				for i, v := range xr {
					yr[i] = v * s * w[i]
				}
			default:
				for i, v := range xr {
					yr[i] = v * s
				}
			}
			if z != nil {
				gateSilu(yr, z[r*cols:r*cols+cols])
			}
		}
	})
}

// rmsScale is rsqrt(mean(x^2) + eps), the sum taken in float64 with four accumulators.
func rmsScale(x []float32, eps float64) float32 {
	var s0, s1, s2, s3 float64
	i := 0
	for ; i+4 <= len(x); i += 4 {
		a, b, c, d := float64(x[i]), float64(x[i+1]), float64(x[i+2]), float64(x[i+3])
		s0 += a * a
		s1 += b * b
		s2 += c * c
		s3 += d * d
	}
	for ; i < len(x); i++ {
		a := float64(x[i])
		s0 += a * a
	}
	return float32(1 / math.Sqrt(((s0+s1)+(s2+s3))/float64(len(x))+eps))
}

// normConsts is the norm twins' setBytes struct: the rows of x, NormParams.Eps and
// whether a weight is bound.
type normConsts struct {
	Rows      int     `msl:"rows"`
	Cols      int     `msl:"cols"`
	Eps       float64 `msl:"eps"`
	HasWeight bool    `msl:"has_weight"`
}

func normParamsOf(l *Launch, x, w *Arg) []byte {
	rows, cols := rowsCols(x)
	return mslPack(&normConsts{Rows: rows, Cols: cols, Eps: l.Params.(*NormParams).Eps, HasWeight: w != nil})
}

func rmsNormEncode(l *Launch, e Encoder) {
	x, _, w, o := normArgs(l, false)
	rows, cols := rowsCols(x)
	e.Entry("rms_norm_float32")
	e.SetArg(0, x)
	if w != nil {
		e.SetArg(1, w)
	} else {
		e.SetArg(1, x) // bound but never read: the kernel checks has_weight
	}
	e.SetArg(2, o)
	e.SetBytes(3, normParamsOf(l, x, w))
	e.DispatchThreadgroups([3]int{max(rows, 1), 1, 1}, RowGroup(cols, e))
}

func gatedRMSNormEncode(l *Launch, e Encoder) {
	x, z, w, o := normArgs(l, true)
	rows, cols := rowsCols(x)
	e.Entry("gated_rms_norm_float32")
	e.SetArg(0, x)
	e.SetArg(1, z)
	if w != nil {
		e.SetArg(2, w)
	} else {
		e.SetArg(2, x)
	}
	e.SetArg(3, o)
	e.SetBytes(4, normParamsOf(l, x, w))
	e.DispatchThreadgroups([3]int{max(rows, 1), 1, 1}, RowGroup(cols, e))
}

// normSamples covers both kernels with and without a weight, decode-sized rows (16, 64),
// odd and long rows.
func normSamples(rng *rand.Rand) []*Launch {
	var out []*Launch
	for _, k := range []*Kernel{KRMSNorm, KGatedRMSNorm} {
		for _, sh := range [][]int{{1, 64}, {8, 16}, {3, 37}, {2, 2500}} {
			for _, withW := range []bool{true, false} {
				l := &Launch{Kernel: k, Params: &NormParams{Eps: 1e-6}}
				add := func(a Arg, lo, hi float64) {
					Fill(rng, &a, lo, hi)
					l.Args[l.NArgs] = a
					l.NArgs++
				}
				add(NewArg(Contiguous(Float32, sh...)), -2, 2)
				if k == KGatedRMSNorm {
					add(NewArg(Contiguous(Float32, sh...)), -4, 4)
				}
				if withW {
					add(NewArg(Contiguous(Float32, sh[1])), 0.5, 1.5)
				}
				o := NewArg(Contiguous(Float32, sh...))
				Poison(&o)
				l.Args[l.NArgs] = o
				l.NArgs++
				out = append(out, l)
			}
		}
	}
	return out
}
