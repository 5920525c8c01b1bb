package kernels

import (
	"math"
	"math/rand"
)

// SDPAParams is the parameter struct of KSDPA.
type SDPAParams struct{ Scale float64 }

// SDPAMaxHeadDim is the largest query/key and value head size the MSL twin takes.
const SDPAMaxHeadDim = 256

// KSDPA is scaled dot-product attention, softmax in float32:
// out[b,h,i] = sum_j softmax_j(Scale * q[b,h,i] . k[b,h/G,j]) v[b,h/G,j], G = Hq/Hkv.
// Args q (contiguous float32 [B, Hq, Sq, D]), k ([B, Hkv, Skv, D]) and v
// ([B, Hkv, Skv, Dv]) float32 with a unit stride on the last axis (any strides and
// offset otherwise, so a slice of a preallocated cache needs no copy), an optional bool
// mask ([B, Hq, Sq, Skv], any strides: true = attend), out [B, Hq, Sq, Dv]. A fully
// masked row outputs 0. D and Dv are at most SDPAMaxHeadDim. The Go twin: scores in
// mmDot's order times Scale, weights exp32(score - max), their sum in float64 over four
// lanes, the weighted values added key by key, then one multiply by 1/sum.
var KSDPA = Register(&Kernel{Name: "sdpa", Family: "sdpa", CPU: sdpaCPU, Encode: sdpaEncode})

func init() { RegisterSamples("sdpa", sdpaSamples) }

// sdpaArgs splits a launch: q, k, v, the mask (nil if absent), out.
func sdpaArgs(l *Launch) (q, k, v, m, o *Arg) {
	q, k, v, o = &l.Args[0], &l.Args[1], &l.Args[2], l.Out()
	if l.NArgs == 5 {
		m = &l.Args[3]
	}
	return q, k, v, m, o
}

func sdpaCPU(l *Launch) {
	qa, ka, va, ma, oa := sdpaArgs(l)
	mustFloat32("sdpa", qa, ka, va, oa)
	B, Hq, Sq, D := qa.Shape[0], qa.Shape[1], qa.Shape[2], qa.Shape[3]
	Hkv, Skv, Dv := ka.Shape[1], ka.Shape[2], va.Shape[3]
	if B*Hq*Sq*Dv == 0 {
		return
	}
	q := F32(qa.Data)[qa.Offset : qa.Offset+B*Hq*Sq*D]
	o := F32(oa.Data)[oa.Offset : oa.Offset+B*Hq*Sq*Dv]
	k, v := F32(ka.Data), F32(va.Data)
	scale := float32(l.Params.(*SDPAParams).Scale)
	group := Hq / Hkv
	ks, vs := ka.Strides[2], va.Strides[2]
	var sbuf [1024]float32 // scores of one query row; on the stack for decode-sized caches
	scores := sbuf[:0]
	if Skv > len(sbuf) {
		scores = make([]float32, 0, Skv)
	}
	scores = scores[:Skv]
	negInf := float32(math.Inf(-1))
	for b := 0; b < B; b++ {
		for h := 0; h < Hq; h++ {
			kh := ka.Offset + b*ka.Strides[0] + (h/group)*ka.Strides[1]
			vh := va.Offset + b*va.Strides[0] + (h/group)*va.Strides[1]
			for i := 0; i < Sq; i++ {
				row := (b*Hq+h)*Sq + i
				qr, or := q[row*D:row*D+D], o[row*Dv:row*Dv+Dv]
				// Scores: every key's dot (one matrix-vector product over the cache rows),
				// then masked keys are marked -Inf.
				gemvF32(qr, k[kh:kh+(Skv-1)*ks+D], ks, scores)
				mx, any := negInf, false
				var mrow []byte
				mst := 0
				if ma != nil {
					mrow = ma.Data[ma.Offset+b*ma.Strides[0]+h*ma.Strides[1]+i*ma.Strides[2]:]
					mst = ma.Strides[3]
				}
				for j, d := range scores {
					if mrow != nil && mrow[j*mst] == 0 {
						scores[j] = negInf
						continue
					}
					s := d * scale
					scores[j] = s
					if s > mx {
						mx = s
					}
					any = true
				}
				clear(or)
				if !any {
					continue
				}
				// Weights in place (a masked key's -Inf gives 0, which axpyRows skips),
				// summed in float64 in four lanes (lane j takes keys j mod 4), then
				// (lane0 + lane1) + (lane2 + lane3).
				expArray(scores, scores, 1, mx)
				sum := sdpaSum(scores)
				axpyRows(or, scores, v[vh:vh+(Skv-1)*vs+Dv], vs)
				inv := float32(1 / sum)
				for d := range or {
					or[d] *= inv
				}
			}
		}
	}
}

// sdpaSum is the float64 sum of w in sdpa's order (see KSDPA): sumRow's four
// accumulators.
func sdpaSum(w []float32) float64 { return sumRow(w) }

// axpy32 is y += a * x (len(x) >= len(y)).
func axpy32(y []float32, a float32, x []float32) {
	x = x[:len(y)]
	for i := range y {
		y[i] += float32(a * x[i]) // rounded product: never fused (see mmDot)
	}
}

// sdpaSimdgroups is the number of simdgroups sharing one query row's keys in the MSL twin.
const sdpaSimdgroups = 4

func sdpaEncode(l *Launch, e Encoder) {
	q, k, v, m, o := sdpaArgs(l)
	p := mslSDPA{
		B: int32(q.Shape[0]), Hq: int32(q.Shape[1]), Hkv: int32(k.Shape[1]), Sq: int32(q.Shape[2]),
		Skv: int32(k.Shape[2]), D: int32(q.Shape[3]), Dv: int32(v.Shape[3]),
		Scale: float32(l.Params.(*SDPAParams).Scale),
	}
	for i := 0; i < 3; i++ {
		p.KStrides[i], p.VStrides[i] = int32(k.Strides[i]), int32(v.Strides[i])
	}
	e.Entry("sdpa_float32")
	e.SetArg(0, q)
	e.SetArg(1, k)
	e.SetArg(2, v)
	if m != nil {
		p.HasMask = 1
		for i := 0; i < 4; i++ {
			p.MStrides[i] = int32(m.Strides[i])
		}
		e.SetArg(3, m)
	} else {
		e.SetArg(3, q) // bound but never read: has_mask is 0
	}
	e.SetArg(4, o)
	e.SetBytes(5, mslBytes(&p))
	e.DispatchThreadgroups([3]int{max(q.Shape[2], 1), max(q.Shape[1], 1), max(q.Shape[0], 1)},
		[3]int{32 * sdpaSimdgroups, 1, 1})
}

// sdpaSamples covers decode (Sq 1) and prefill with a causal mask, GQA, D 16 and 32 and
// an odd size, keys and values read from a larger cache buffer (offset, strided), and a
// padding mask that blanks every key of one row.
func sdpaSamples(rng *rand.Rand) []*Launch {
	var out []*Launch
	for _, c := range []struct {
		B, Hq, Hkv, Sq, Skv, D, Dv, MaxS int
		mask                             string
	}{
		{1, 4, 2, 1, 128, 32, 32, 128, ""},
		{2, 4, 2, 1, 9, 16, 16, 16, "pad"},
		{1, 4, 2, 7, 7, 32, 32, 7, "causal"},
		{2, 2, 1, 3, 40, 20, 12, 64, "pad"},
	} {
		l := &Launch{Kernel: KSDPA, Params: &SDPAParams{Scale: 1 / math.Sqrt(float64(c.D))}}
		q := NewArg(Contiguous(Float32, c.B, c.Hq, c.Sq, c.D))
		Fill(rng, &q, -1, 1)
		cache := func(d int) Arg {
			full := Contiguous(Float32, c.B, c.Hkv, c.MaxS, d)
			a := NewArg(full)
			Fill(rng, &a, -1, 1)
			a.Shape[2] = c.Skv // a window of the cache, from position 1 when it fits
			if c.MaxS > c.Skv {
				a.Offset = d
			}
			return a
		}
		l.Args[0], l.Args[1], l.Args[2], l.NArgs = q, cache(c.D), cache(c.Dv), 3
		switch c.mask {
		case "causal": // [Sq, Skv] broadcast over batch and heads
			ml := Contiguous(Bool, 1, 1, c.Sq, c.Skv)
			m := NewArg(ml)
			for i := 0; i < c.Sq; i++ {
				for j := 0; j < c.Skv; j++ {
					if j <= i+c.Skv-c.Sq {
						m.Data[i*c.Skv+j] = byte(1 + j%2) // any non-zero byte is true, on both twins
					}
				}
			}
			m.Layout = BroadcastLayout(&ml, &Layout{NDim: 4, Shape: [MaxDims]int{c.B, c.Hq, c.Sq, c.Skv}})
			l.Args[3], l.NArgs = m, 4
		case "pad": // left padding per batch row, [B, 1, 1, Skv]; row 1 fully padded
			ml := Contiguous(Bool, c.B, 1, 1, c.Skv)
			m := NewArg(ml)
			for j := 2; j < c.Skv; j++ {
				m.Data[j] = 1
			}
			m.Layout = BroadcastLayout(&ml, &Layout{NDim: 4, Shape: [MaxDims]int{c.B, c.Hq, c.Sq, c.Skv}})
			l.Args[3], l.NArgs = m, 4
		}
		o := NewArg(Contiguous(Float32, c.B, c.Hq, c.Sq, c.Dv))
		Poison(&o)
		l.Args[l.NArgs] = o
		l.NArgs++
		out = append(out, l)
	}
	return out
}
