package kernels

import (
	"fmt"
	"math"
	"math/rand"
	"unsafe"
)

// Family "gated_delta": the Gated DeltaNet recurrence, one kernel for T-step prefill
// and T = 1 decode, with an optional mask.

// GatedDeltaMaxDk is the largest key head size the kernel takes: the MSL twin keeps
// ceil(Dk/32) state entries per lane in registers, at most 8.
const GatedDeltaMaxDk = 256

// KGatedDelta runs the gated delta rule over T steps. Args q, k [B, T, Hk, Dk];
// v [B, T, Hv, Dv]; g (log-decay), beta [B, T, Hv]; state [B, Hv, Dv, Dk]; optionally
// mask (bool [B, T], true = valid step); out. All float inputs are float32 and every input
// is contiguous (any offset). out is 1-D float32 and packs y [B, T, Hv, Dv] followed by
// the new state [B, Hv, Dv, Dk]. No Params: sizes come from the layouts, the mask from
// NArgs. Value head h reads key head h/(Hv/Hk). Per (b, h) and step t, with S = state[b, h]:
//
//	S *= exp(g); kv = S k; delta = (v - kv) * beta; S += delta (x) k; y = S q
//
// A masked step leaves S unchanged and writes y = 0.
var KGatedDelta = Register(&Kernel{Name: "gated_delta", Family: "gated_delta",
	CPU: gatedDeltaCPU, Encode: gatedDeltaEncode})

// gatedDeltaConsts are the sizes of one gated-delta launch, also its MSL twin's
// setBytes struct.
type gatedDeltaConsts struct {
	B, T, Hk, Hv, Dk, Dv int
	Masked               bool `msl:"masked"`
}

// ny and ns are the element counts of y and of the state in the packed output.
func (d *gatedDeltaConsts) ny() int { return d.B * d.T * d.Hv * d.Dv }
func (d *gatedDeltaConsts) ns() int { return d.B * d.Hv * d.Dv * d.Dk }

func gatedDeltaDims(l *Launch) gatedDeltaConsts {
	if l.NArgs != 7 && l.NArgs != 8 {
		panic(fmt.Sprintf("kernels: gated_delta: %d args", l.NArgs))
	}
	q, v := &l.Args[0].Layout, &l.Args[2].Layout
	if q.NDim != 4 || v.NDim != 4 {
		panic(fmt.Sprintf("kernels: gated_delta: q %v, v %v", q.Dims(), v.Dims()))
	}
	d := gatedDeltaConsts{B: q.Shape[0], T: q.Shape[1], Hk: q.Shape[2], Dk: q.Shape[3],
		Hv: v.Shape[2], Dv: v.Shape[3], Masked: l.NArgs == 8}
	if d.Hk == 0 || d.Hv%d.Hk != 0 || d.Dk > GatedDeltaMaxDk || l.Out().Size() != d.ny()+d.ns() {
		panic(fmt.Sprintf("kernels: gated_delta: q %v, v %v, out %v", q.Dims(), v.Dims(), l.Out().Dims()))
	}
	return d
}

// gdF32 is the n float32 elements of a contiguous argument.
func gdF32(a *Arg, n int) []float32 { return F32(a.Data)[a.Offset : a.Offset+n] }

func gatedDeltaCPU(l *Launch) {
	d := gatedDeltaDims(l)
	nb, nt, hk, hv, dk, dvn := d.B, d.T, d.Hk, d.Hv, d.Dk, d.Dv
	q := gdF32(&l.Args[0], nb*nt*hk*dk)
	k := gdF32(&l.Args[1], nb*nt*hk*dk)
	v := gdF32(&l.Args[2], nb*nt*hv*dvn)
	g := gdF32(&l.Args[3], nb*nt*hv)
	beta := gdF32(&l.Args[4], nb*nt*hv)
	out := gdF32(l.Out(), d.ny()+d.ns())
	y, st := out[:d.ny()], out[d.ny():]
	in := gdF32(&l.Args[5], d.ns())
	var mask []byte
	if d.Masked {
		m := &l.Args[6]
		mask = m.Data[m.Offset : m.Offset+nb*nt]
	}
	r := hv / hk
	// head runs every step of (b, h): heads never share state, so they may run on
	// either core in any order with the same arithmetic.
	head := func(bh int) {
		b, h := bh/hv, bh%hv
		src, s := in[bh*dvn*dk:][:dvn*dk], st[bh*dvn*dk:][:dvn*dk]
		if gdChunk512(dk, dvn, nt) {
			gdHead512(src, s, dk, dvn, nt, func(t int) (bool, []float32, []float32, []float32, []float32, float32, float32) {
				bt := b*nt + t
				yh := y[(bt*hv+h)*dvn:][:dvn]
				if mask != nil && mask[bt] == 0 {
					return false, nil, nil, nil, yh, 0, 0
				}
				ko := (bt*hk + h/r) * dk
				return true, k[ko : ko+dk], q[ko : ko+dk], v[(bt*hv+h)*dvn:][:dvn], yh,
					float32(math.Exp(float64(g[bt*hv+h]))), beta[bt*hv+h]
			})
			return
		}
		for t := 0; t < nt; t++ {
			bt := b*nt + t
			yh := y[(bt*hv+h)*dvn:][:dvn]
			if mask != nil && mask[bt] == 0 {
				clear(yh)
				continue
			}
			ko := (bt*hk + h/r) * dk
			step := gdStep
			if nt == 1 { // a decode step: its state is read again only a model later
				step = gdStepStream
			}
			step(s, src, k[ko:ko+dk], q[ko:ko+dk], v[(bt*hv+h)*dvn:][:dvn], yh,
				float32(math.Exp(float64(g[bt*hv+h]))), beta[bt*hv+h])
			src = s // later steps update the new state in place
		}
		if &src[0] != &s[0] { // every step masked: the state passes through
			copy(s, src)
		}
	}
	if nb*hv*dvn*dk < gdHelpElems {
		for bh := 0; bh < nb*hv; bh++ {
			head(bh)
		}
		return
	}
	split := l.Helper.parallelRows
	if nt*nb*hv*dvn*dk >= qmmWideMACs { // a prefill chunk's recurrence: both cores either way
		split = l.Helper.parallelWide
	}
	split(nb*hv, 1, func(h0, h1, _ int) {
		for bh := h0; bh < h1; bh++ {
			head(bh)
		}
	})
}

// gdHelpElems is the state size (elements, all heads) from which the heads split
// between the two cores: 256 KB, where a head's work outweighs a round trip.
const gdHelpElems = 1 << 16

// gdStep is one step of one head: the state rows src, scaled by decay and updated,
// go to s (src may be s), and y gets the rows dotted with q. Dk = 16 (the repro
// model's size) and Dk a multiple of 4 (the real models') have assembly forms on
// amd64 with AVX that round every operation as the Go loops do.
func gdStep(s, src, k, q, v, y []float32, decay, beta float32) {
	dk := len(k)
	if dk == 16 {
		if &src[0] != &s[0] {
			copy(s, src)
		}
		gdStep16(s, k, q, v, y, decay, beta)
		return
	}
	if useAVX && dk%4 == 0 && len(y) > 0 {
		s, src = s[:len(y)*dk], src[:len(y)*dk]
		gdRowsAVX(&s[0], &src[0], &k[0], &q[0], &v[0], &y[0], len(y), dk/4, decay, beta)
		return
	}
	for i := range y {
		row := s[i*dk : i*dk+dk]
		if &src[0] != &s[0] {
			copy(row, src[i*dk:i*dk+dk])
		}
		delta := (v[i] - gdDecayDot(row, k, decay)) * beta
		y[i] = gdUpdateDot(row, k, q, delta)
	}
}

// gdStepStream is gdStep for a decode step's new state, in a buffer apart from src
// that is read again only once the whole model has run (from memory either way): on
// amd64 with AVX its whole quads of rows are streamed to s by gdRowsNT, which skips
// reading s's lines before writing them, when s is 16-byte aligned. The values are
// gdStep's, bit for bit.
func gdStepStream(s, src, k, q, v, y []float32, decay, beta float32) {
	dk, quads := len(k), len(y)/4
	if !useAVX || dk%4 != 0 || dk == 16 || quads == 0 || &s[0] == &src[0] ||
		uintptr(unsafe.Pointer(&s[0]))%16 != 0 {
		gdStep(s, src, k, q, v, y, decay, beta)
		return
	}
	var tmp [4 * GatedDeltaMaxDk]float32
	gdRowsNT(&s[0], &src[0], &k[0], &q[0], &v[0], &y[0], &tmp[0], quads, dk/4, decay, beta)
	if r := 4 * quads; r < len(y) {
		gdStep(s[r*dk:], src[r*dk:], k, q, v[r:], y[r:], decay, beta)
	}
}

// gdStep16 is one step of one head for Dk = 16 (the repro model's size): the assembly
// form on amd64 with AVX, else gdStep16Go; both round every operation the same way.
func gdStep16(s, k, q, v, y []float32, decay, beta float32) {
	if useAVX && len(y) > 0 {
		s, k, q, v = s[:len(y)*16], k[:16], q[:16], v[:len(y)]
		gdStep16AVX(&s[0], &k[0], &q[0], &v[0], &y[0], len(y), decay, beta)
		return
	}
	gdStep16Go(s, k, q, v, y, decay, beta)
}

// gdStep16Go is the definition: each state row is held in locals, so it is read and
// written once.
func gdStep16Go(s, k, q, v, y []float32, decay, beta float32) {
	k, q = k[:16], q[:16]
	for i := range y {
		r := s[i*16 : i*16+16 : i*16+16]
		r0, r1, r2, r3 := r[0]*decay, r[1]*decay, r[2]*decay, r[3]*decay
		r4, r5, r6, r7 := r[4]*decay, r[5]*decay, r[6]*decay, r[7]*decay
		r8, r9, r10, r11 := r[8]*decay, r[9]*decay, r[10]*decay, r[11]*decay
		r12, r13, r14, r15 := r[12]*decay, r[13]*decay, r[14]*decay, r[15]*decay
		s0 := r0*k[0] + r4*k[4] + r8*k[8] + r12*k[12]
		s1 := r1*k[1] + r5*k[5] + r9*k[9] + r13*k[13]
		s2 := r2*k[2] + r6*k[6] + r10*k[10] + r14*k[14]
		s3 := r3*k[3] + r7*k[7] + r11*k[11] + r15*k[15]
		d := (v[i] - ((s0 + s1) + (s2 + s3))) * beta
		r0, r1, r2, r3 = r0+d*k[0], r1+d*k[1], r2+d*k[2], r3+d*k[3]
		r4, r5, r6, r7 = r4+d*k[4], r5+d*k[5], r6+d*k[6], r7+d*k[7]
		r8, r9, r10, r11 = r8+d*k[8], r9+d*k[9], r10+d*k[10], r11+d*k[11]
		r12, r13, r14, r15 = r12+d*k[12], r13+d*k[13], r14+d*k[14], r15+d*k[15]
		s0 = r0*q[0] + r4*q[4] + r8*q[8] + r12*q[12]
		s1 = r1*q[1] + r5*q[5] + r9*q[9] + r13*q[13]
		s2 = r2*q[2] + r6*q[6] + r10*q[10] + r14*q[14]
		s3 = r3*q[3] + r7*q[7] + r11*q[11] + r15*q[15]
		y[i] = (s0 + s1) + (s2 + s3)
		r[0], r[1], r[2], r[3] = r0, r1, r2, r3
		r[4], r[5], r[6], r[7] = r4, r5, r6, r7
		r[8], r[9], r[10], r[11] = r8, r9, r10, r11
		r[12], r[13], r[14], r[15] = r12, r13, r14, r15
	}
}

// gdDecayDot scales row by decay and returns row . k (four partial sums).
func gdDecayDot(row, k []float32, decay float32) float32 {
	k = k[:len(row)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(row); i += 4 {
		r := row[i : i+4 : i+4]
		kk := k[i : i+4 : i+4]
		r[0] *= decay
		r[1] *= decay
		r[2] *= decay
		r[3] *= decay
		s0 += r[0] * kk[0]
		s1 += r[1] * kk[1]
		s2 += r[2] * kk[2]
		s3 += r[3] * kk[3]
	}
	for ; i < len(row); i++ {
		row[i] *= decay
		s0 += row[i] * k[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// gdUpdateDot adds delta*k to row and returns the updated row . q (four partial sums).
func gdUpdateDot(row, k, q []float32, delta float32) float32 {
	k, q = k[:len(row)], q[:len(row)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(row); i += 4 {
		r := row[i : i+4 : i+4]
		kk := k[i : i+4 : i+4]
		qq := q[i : i+4 : i+4]
		r[0] += delta * kk[0]
		r[1] += delta * kk[1]
		r[2] += delta * kk[2]
		r[3] += delta * kk[3]
		s0 += r[0] * qq[0]
		s1 += r[1] * qq[1]
		s2 += r[2] * qq[2]
		s3 += r[3] * qq[3]
	}
	for ; i < len(row); i++ {
		row[i] += delta * k[i]
		s0 += row[i] * q[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// gdRowsPerGroup is the number of state rows (SIMD groups of 32 lanes) per threadgroup.
const gdRowsPerGroup = 4

// gatedDeltaEntry picks the register width: the smallest of 1, 2, 4, 8 entries per lane
// covering Dk; lanes past Dk hold zeros.
func gatedDeltaEntry(dk int) string {
	switch {
	case dk <= 32:
		return "gated_delta_float32_dk32"
	case dk <= 64:
		return "gated_delta_float32_dk64"
	case dk <= 128:
		return "gated_delta_float32_dk128"
	}
	return "gated_delta_float32_dk256"
}

func gatedDeltaEncode(l *Launch, e Encoder) {
	d := gatedDeltaDims(l)
	e.Entry(gatedDeltaEntry(d.Dk))
	for i := 0; i < 6; i++ {
		e.SetArg(i, &l.Args[i])
	}
	if d.Masked {
		e.SetArg(6, &l.Args[6])
	} else {
		e.SetArg(6, &l.Args[3]) // a placeholder the kernel never reads
	}
	e.SetArg(7, l.Out())
	e.SetBytes(8, mslPack(&d))
	rows := min(d.Dv, gdRowsPerGroup, max(threadLimit(e)/32, 1)) // fewer where the pipeline allows fewer threads
	if rows == 0 || d.B*d.Hv == 0 {
		return // nothing to compute
	}
	e.DispatchThreadgroups([3]int{1, (d.Dv + rows - 1) / rows, d.B * d.Hv}, [3]int{32, rows, 1})
}

func init() { RegisterSamples("gated_delta", gatedDeltaSamples) }

// gdSample is the shape of one sample launch of the gated_delta family.
type gdSample struct {
	B, T, Hk, Hv, Dk, Dv int
	Masked               bool
}

// gdSampleCases are the shapes of the registered gated_delta samples: every
// register width, Hv/Hk 1 and 2, T 1 and 17, B 1 and 2, masked and not, Dv not a
// multiple of the rows per threadgroup.
var gdSampleCases = []gdSample{
	{B: 1, T: 1, Hk: 2, Hv: 4, Dk: 16, Dv: 16},                // the model's decode step
	{B: 2, T: 17, Hk: 2, Hv: 4, Dk: 16, Dv: 16, Masked: true}, // model prefill, padded
	{B: 1, T: 1, Hk: 3, Hv: 3, Dk: 32, Dv: 5},
	{B: 2, T: 17, Hk: 1, Hv: 2, Dk: 32, Dv: 8, Masked: true},
	{B: 2, T: 1, Hk: 1, Hv: 1, Dk: 128, Dv: 6, Masked: true},
	{B: 1, T: 17, Hk: 2, Hv: 4, Dk: 128, Dv: 3},
	{B: 1, T: 17, Hk: 2, Hv: 2, Dk: 48, Dv: 4, Masked: true},
	{B: 2, T: 5, Hk: 1, Hv: 2, Dk: 33, Dv: 3},
	{B: 1, T: 3, Hk: 1, Hv: 2, Dk: 256, Dv: 2},
}

func gatedDeltaSamples(rng *rand.Rand) []*Launch {
	out := make([]*Launch, 0, len(gdSampleCases))
	for _, c := range gdSampleCases {
		out = append(out, newGatedDeltaLaunch(rng, c))
	}
	return out
}

// newGatedDeltaLaunch builds a launch of shape c with model-like random inputs: unit q
// and k rows (q scaled by Dk^-0.5), g in [-1, -0.01), beta in (0, 1), and a mask with
// valid and masked steps in every batch row when c.Masked. The output is poisoned.
func newGatedDeltaLaunch(rng *rand.Rand, c gdSample) *Launch {
	l := &Launch{Kernel: KGatedDelta, NArgs: 7}
	l.Args[0] = NewArg(Contiguous(Float32, c.B, c.T, c.Hk, c.Dk))
	l.Args[1] = NewArg(Contiguous(Float32, c.B, c.T, c.Hk, c.Dk))
	l.Args[2] = NewArg(Contiguous(Float32, c.B, c.T, c.Hv, c.Dv))
	l.Args[3] = NewArg(Contiguous(Float32, c.B, c.T, c.Hv))
	l.Args[4] = NewArg(Contiguous(Float32, c.B, c.T, c.Hv))
	l.Args[5] = NewArg(Contiguous(Float32, c.B, c.Hv, c.Dv, c.Dk))
	gdUnitRows(rng, F32(l.Args[0].Data), c.Dk, 1/math.Sqrt(float64(c.Dk)))
	gdUnitRows(rng, F32(l.Args[1].Data), c.Dk, 1)
	Fill(rng, &l.Args[2], -1, 1)
	Fill(rng, &l.Args[3], -1, -0.01)
	Fill(rng, &l.Args[4], 0.05, 0.95)
	Fill(rng, &l.Args[5], -0.5, 0.5)
	if c.Masked {
		m := NewArg(Contiguous(Bool, c.B, c.T))
		for b := 0; b < c.B; b++ {
			for t := 0; t < c.T; t++ {
				// Left padding in row 0, a hole in row 1 (T = 1: row 1 masked).
				valid := rng.Intn(4) != 0
				switch {
				case c.T == 1:
					valid = b%2 == 0
				case b%2 == 0:
					valid = t >= 2
				case t == c.T/2:
					valid = false
				}
				// Some true bytes are 2: any non-zero byte is true, on both twins.
				m.Data[b*c.T+t] = gdByte(valid) << (t % 2)
			}
		}
		l.Args[6] = m
		l.NArgs = 8
	}
	o := NewArg(Contiguous(Float32, c.B*c.T*c.Hv*c.Dv+c.B*c.Hv*c.Dv*c.Dk))
	Poison(&o)
	l.Args[l.NArgs-1] = o
	return l
}

// gdUnitRows fills v with random rows of length n and norm scale.
func gdUnitRows(rng *rand.Rand, v []float32, n int, scale float64) {
	for r := 0; r+n <= len(v); r += n {
		var ss float64
		row := make([]float64, n)
		for i := range row {
			row[i] = rng.NormFloat64()
			ss += row[i] * row[i]
		}
		for i := range row {
			v[r+i] = float32(row[i] * scale / math.Sqrt(ss))
		}
	}
}

func gdByte(b bool) byte {
	if b {
		return 1
	}
	return 0
}
