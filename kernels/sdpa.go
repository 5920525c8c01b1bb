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

// sdpaChunk is how many keys sdpaCPU takes at a time: every query head of a group passes
// over one chunk of K (later of V) while it is still in cache, so a grouped cache is read
// from memory once per step instead of once per query head. Each head's sums keep
// their order: the scores are per key, and the output adds chunk after chunk in key
// order, exactly as one pass over all keys would.
const sdpaChunk = 256

// sdpaSplitKeys is the fewest keys per launch (query rows x keys, over all heads) at
// which sdpaCPU shares its key/value heads with a helper: from there on a launch
// streams megabytes of cache, against a round trip of microseconds.
const sdpaSplitKeys = 16384

// sdpaRun is one sdpa launch, split into units (batch row, key/value head) that read
// their own keys and write their own output rows.
type sdpaRun struct {
	qa, ka, va, ma      *Arg
	q, o, k, v          []float32
	B, Hq, Sq, D        int
	Hkv, Skv, Dv, group int
	ks, vs              int
	scale               float32
}

func sdpaCPU(l *Launch) {
	qa, ka, va, ma, oa := sdpaArgs(l)
	mustFloat32("sdpa", qa, ka, va, oa)
	B, Hq, Sq, D := qa.Shape[0], qa.Shape[1], qa.Shape[2], qa.Shape[3]
	Hkv, Skv, Dv := ka.Shape[1], ka.Shape[2], va.Shape[3]
	if B*Hq*Sq*Dv == 0 {
		return
	}
	r := sdpaRun{ka: ka, va: va, ma: ma,
		q: F32(qa.Data)[qa.Offset : qa.Offset+B*Hq*Sq*D], o: F32(oa.Data)[oa.Offset : oa.Offset+B*Hq*Sq*Dv],
		k: F32(ka.Data), v: F32(va.Data), Hq: Hq, Sq: Sq, D: D, Hkv: Hkv, Skv: Skv, Dv: Dv,
		group: Hq / Hkv, ks: ka.Strides[2], vs: va.Strides[2], scale: float32(l.Params.(*SDPAParams).Scale)}
	// Past sdpaSplitKeys the (unit, query row) pairs are shared with the second core: a
	// deep cache is read from memory, and two cores read it about twice as fast as
	// one; a prefill's causal rows grow in cost, so they go in small claimed chunks.
	n := B * Hkv * Sq
	if n > 1 && Hq*Sq*Skv >= sdpaSplitKeys && l.Helper != nil {
		h := new(sdpaRun) // only a launch that may split pays for the allocations
		*h = r
		l.Helper.parallelWide(n, max(1, n/32), func(lo, hi, _ int) { h.rows(lo, hi) })
		return
	}
	r.rows(0, n)
}

// rows computes rows lo..hi-1 of the launch (row t is query row t % Sq of unit t / Sq;
// unit u is batch row u / Hkv, key/value head u % Hkv) with scratch of its own.
func (r *sdpaRun) rows(lo, hi int) {
	Hq, Sq, D, Skv, Dv, group := r.Hq, r.Sq, r.D, r.Skv, r.Dv, r.group
	q, o, k, v, ka, va, ma, ks, vs, scale := r.q, r.o, r.k, r.v, r.ka, r.va, r.ma, r.ks, r.vs, r.scale
	// The scores of the group's query rows, then each row's 1/sum (0: every key masked).
	sp := getScratchDirty(group*Skv + group) // every score and 1/sum is written before use
	defer putScratch(sp)
	scores, inv := (*sp)[:group*Skv], (*sp)[group*Skv:]
	negInf := float32(math.Inf(-1))
	for t := lo; t < hi; t++ {
		u, i := t/Sq, t%Sq
		b, kh := u/r.Hkv, u%r.Hkv
		kb := ka.Offset + b*ka.Strides[0] + kh*ka.Strides[1]
		vb := va.Offset + b*va.Strides[0] + kh*va.Strides[1]
		// row(g) is query row i of head kh*group+g.
		row := func(g int) int { return (b*Hq+kh*group+g)*Sq + i }
		// Keys past the last one any of the group's rows may see (a causal prefill's
		// later keys) take no score and add nothing: their weights are 0.
		lim := Skv
		if ma != nil {
			lim = 0
			for g := 0; g < group; g++ {
				mrow := ma.Data[ma.Offset+b*ma.Strides[0]+(kh*group+g)*ma.Strides[1]+i*ma.Strides[2]:]
				for j := Skv - 1; j >= lim; j-- {
					if mrow[j*ma.Strides[3]] != 0 {
						lim = j + 1
						break
					}
				}
			}
		}
		for c := 0; c < lim; c += sdpaChunk {
			n := min(sdpaChunk, lim-c)
			kc := k[kb+c*ks : kb+(c+n-1)*ks+D]
			for g := 0; g < group; g++ {
				r := row(g)
				gemvF32(q[r*D:r*D+D], kc, ks, scores[g*Skv+c:g*Skv+c+n])
			}
		}
		for g := 0; g < group; g++ {
			sc, or := scores[g*Skv:(g+1)*Skv], o[row(g)*Dv:row(g)*Dv+Dv]
			clear(or)
			inv[g] = 0
			var mrow []byte
			mst := 0
			if ma != nil {
				mrow = ma.Data[ma.Offset+b*ma.Strides[0]+(kh*group+g)*ma.Strides[1]+i*ma.Strides[2]:]
				mst = ma.Strides[3]
			}
			mx, any := negInf, false
			if mrow == nil { // the loop without the mask's branch
				for j, d := range sc {
					s := d * scale
					sc[j] = s
					if s > mx {
						mx = s
					}
				}
				any = len(sc) > 0
			} else {
				for j, d := range sc {
					if mrow[j*mst] == 0 {
						sc[j] = negInf
						continue
					}
					s := d * scale
					sc[j] = s
					if s > mx {
						mx = s
					}
					any = true
				}
			}
			if !any {
				continue // every key masked: the output row stays zero
			}
			expArray(sc, sc, 1, mx)
			inv[g] = float32(1 / sumRow(sc)) // sum >= 1 (the max's term), so inv > 0
		}
		for c := 0; c < lim; c += sdpaChunk {
			n := min(sdpaChunk, lim-c)
			vc := v[vb+c*vs : vb+(c+n-1)*vs+Dv]
			for g := 0; g < group; g++ {
				if inv[g] != 0 {
					r := row(g)
					axpyRows(o[r*Dv:r*Dv+Dv], scores[g*Skv+c:g*Skv+c+n], vc, vs)
				}
			}
		}
		for g := 0; g < group; g++ {
			r := row(g)
			for d := range o[r*Dv : r*Dv+Dv] {
				o[r*Dv+d] *= inv[g]
			}
		}
	}
}

// axpy32 is y += a * x (len(x) >= len(y)).
func axpy32(y []float32, a float32, x []float32) {
	x = x[:len(y)]
	for i := range y {
		y[i] += float32(a * x[i]) // rounded product: never fused (see mmDot)
	}
}

// sdpaSimdgroups, sdpaMaxGroup and sdpaCombineSimdgroups are sdpa.metal's SDPA_SG,
// SDPA_MAXG and SDPA_COMBINE_SG.
const (
	sdpaSimdgroups        = 4
	sdpaMaxGroup          = 4
	sdpaCombineSimdgroups = 16
)

// The MSL twin splits each query row's keys among threadgroups: at least
// sdpaMinChunk keys each (below, the partials cost more than they save), and about
// sdpaGroups threadgroups in all, enough to fill a large GPU at decode (a few query
// rows, thousands of keys) while prefill's many rows keep one split. On the H200
// translation, decode over 4,096 keys ran best with 32 keys a split
// (docs/h200/run6-exp.log); over 32,768, 256 threadgroups (one wave at the kernel's
// two a multiprocessor) took 91 us against 97 with 512 and 155 with 128
// (docs/h200/run10-exp3.log), and with the current kernel 52 us against 59 with 512
// (docs/h200/run12-exp2.log).
const (
	sdpaMinChunk = 32
	sdpaGroups   = 256
)

// sdpaSplit returns the number of splits of skv keys for a launch of groups
// threadgroups a split, and the keys per split (every split non-empty).
func sdpaSplit(groups, skv int) (splits, chunk int) {
	splits = max(1, min((skv+sdpaMinChunk-1)/sdpaMinChunk, sdpaGroups/max(groups, 1)))
	chunk = max(1, (skv+splits-1)/splits)
	return (skv + chunk - 1) / chunk, chunk
}

// sdpaConsts is the SDPA twins' setBytes struct: the sizes, the strides of k, v and the
// mask, SDPAParams.Scale, and the split of the keys.
type sdpaConsts struct {
	B, Hq, Hkv, Sq, Skv, D, Dv int32
	KStrides                   [3]int32 `msl:"k_strides"` // batch, head, position
	VStrides                   [3]int32 `msl:"v_strides"`
	MStrides                   [4]int32 `msl:"m_strides"` // batch, head, query, key
	HasMask                    int32    `msl:"has_mask"`
	Scale                      float32  `msl:"scale"`
	Splits                     int32    `msl:"splits"` // of the keys, one threadgroup each (sdpaSplit)
	Chunk                      int32    `msl:"chunk"`  // keys per split
}

func sdpaEncode(l *Launch, e Encoder) {
	q, k, v, m, o := sdpaArgs(l)
	p := sdpaConsts{
		B: mslInt("B", q.Shape[0]), Hq: mslInt("Hq", q.Shape[1]), Hkv: mslInt("Hkv", k.Shape[1]),
		Sq: mslInt("Sq", q.Shape[2]), Skv: mslInt("Skv", k.Shape[2]), D: mslInt("D", q.Shape[3]), Dv: mslInt("Dv", v.Shape[3]),
		Scale: float32(l.Params.(*SDPAParams).Scale),
	}
	for i := 0; i < 3; i++ {
		p.KStrides[i], p.VStrides[i] = mslInt("k stride", k.Strides[i]), mslInt("v stride", v.Strides[i])
	}
	e.Entry("sdpa_float32")
	e.SetArg(0, q)
	e.SetArg(1, k)
	e.SetArg(2, v)
	if m != nil {
		p.HasMask = 1
		for i := 0; i < 4; i++ {
			p.MStrides[i] = mslInt("mask stride", m.Strides[i])
		}
		e.SetArg(3, m)
	} else {
		e.SetArg(3, q) // bound but never read: has_mask is 0
	}
	rows := q.Shape[0] * q.Shape[1] * q.Shape[2]
	// Threadgroups of a split: each takes up to sdpaMaxGroup query heads of a key/value head.
	ng := (q.Shape[1]/max(k.Shape[1], 1) + sdpaMaxGroup - 1) / sdpaMaxGroup
	splits, chunk := sdpaSplit(ng*k.Shape[1]*q.Shape[0]*q.Shape[2], k.Shape[2])
	p.Splits, p.Chunk = int32(splits), int32(chunk)
	// The scratch: each (row, split)'s max and sum, then its value row.
	scratch := 4 * max(1, rows*splits*(2+v.Shape[3]))
	e.SetArg(4, o)
	e.SetBytes(5, mslPack(&p))
	e.Scratch(6, scratch)
	// x: the head chunks of a key/value head, then the splits, then the query rows.
	e.DispatchThreadgroups([3]int{max(ng*splits*q.Shape[2], 1), max(k.Shape[1], 1), max(q.Shape[0], 1)},
		ClampGroup(32*sdpaSimdgroups, e)) // fewer simdgroups where the pipeline allows fewer threads
	if splits == 1 {
		return
	}
	e.Entry("sdpa_combine_float32")
	e.SetArg(4, o)
	e.SetBytes(5, mslPack(&p))
	e.Scratch(6, scratch)
	e.DispatchThreadgroups([3]int{(v.Shape[3] + 31) / 32, rows, 1}, ClampGroup(32*sdpaCombineSimdgroups, e))
}

// sdpaSamples covers decode (Sq 1) and prefill with a causal mask, GQA, D 16 and 32 and
// an odd size, one split of the keys and several, keys and values read from a larger cache buffer (offset, strided), and a
// padding mask that blanks every key of one row.
func sdpaSamples(rng *rand.Rand) []*Launch {
	var out []*Launch
	for _, c := range []sdpaCase{
		{1, 4, 2, 1, 128, 32, 32, 128, ""},
		{2, 4, 2, 1, 9, 16, 16, 16, "pad"},
		{1, 4, 2, 7, 7, 32, 32, 7, "causal"},
		{2, 2, 1, 3, 40, 20, 12, 64, "pad"},
		// Decode over 300 keys: the MSL twin splits them among 5 threadgroups and
		// combines; batch row 1 fully padded, so every split of it is empty.
		{2, 2, 1, 1, 300, 16, 24, 320, "pad"},
		// Eight query heads a key/value head: two threadgroups of four heads each.
		{1, 8, 1, 1, 130, 32, 32, 130, ""},
	} {
		out = append(out, sdpaSample(rng, c))
	}
	return out
}

// sdpaCase is the shape of an sdpa sample: keys Skv of a cache of MaxS positions, and
// its mask ("", "causal" or "pad").
type sdpaCase struct {
	B, Hq, Hkv, Sq, Skv, D, Dv, MaxS int
	mask                             string
}

// sdpaSample builds a launch of shape c with inputs from rng.
func sdpaSample(rng *rand.Rand, c sdpaCase) *Launch {
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
	return l
}
