package kernels

import (
	"math/rand"
)

// The gather family: take, take_along_axis and gather_mm. Indices are int32 and come
// from computed data: an index i into an axis of length n means i when 0 <= i < n and
// i+n when -n <= i < 0 (numpy's wrap, as MLX does). Any other index is an error, never
// a silent zero row (a token id outside the vocabulary must not decode as a zero
// embedding): the Go twin stops with a *LaunchError, which fails the batch and every
// array computed from it. The MSL twin cannot stop: it writes zeros for such an index
// (reading nothing out of bounds) and records it in the batch's device error word
// (errword.go; Encode binds it with Encoder.ErrorWord), from which the Metal device,
// after the batch's wait, makes the same *LaunchError (DeviceError, with IndexAxis
// below). The samples use valid indices only, so the twins agree on them and the word
// stays zero; gather_test.go runs out-of-range indices through both twins.

// TakeParams is the parameter struct of KTake: the source viewed as [Outer, Axis, Inner],
// NIdx indices, the output [Outer, NIdx, Inner].
type TakeParams struct {
	Outer int `msl:"outer"`
	Axis  int `msl:"axis"`
	Inner int `msl:"inner"`
	NIdx  int `msl:"nidx"`
}

// KTake gathers along one axis: out[o, j, i] = a[o, idx[j], i]. Args a (any dtype), idx
// (int32), out (a's dtype); a and idx must be dense from their offsets.
var KTake = Register(&Kernel{Name: "take", Family: "gather", CPU: takeCPU, Encode: takeEncode,
	IndexAxis: func(l *Launch) int { return l.Params.(*TakeParams).Axis }})

// TakeAlongParams is the parameter struct of KTakeAlongAxis: the source viewed as
// [Outer, Axis, Inner], the indices and output as [Outer, M, Inner].
type TakeAlongParams struct {
	Outer int `msl:"outer"`
	Axis  int `msl:"axis"`
	M     int `msl:"m"`
	Inner int `msl:"inner"`
}

// KTakeAlongAxis gathers with per-position indices: out[o, j, i] = a[o, idx[o, j, i], i].
// Args a (any dtype), idx (int32), out (a's dtype); a and idx dense from their offsets.
var KTakeAlongAxis = Register(&Kernel{Name: "take_along_axis", Family: "gather",
	CPU: takeAlongCPU, Encode: takeAlongEncode,
	IndexAxis: func(l *Launch) int { return l.Params.(*TakeAlongParams).Axis }})

// GatherMMParams is the parameter struct of KGatherMM: x [Rows, K], w [Experts, O, K],
// idx [Rows, TopK], out [Rows, TopK, O].
type GatherMMParams struct {
	Rows    int `msl:"rows"`
	TopK    int `msl:"topk"`
	Experts int `msl:"experts"`
	O       int `msl:"o"`
	K       int `msl:"k"`
}

// KGatherMM applies a chosen expert matrix to each row: out[t, j, :] = w[idx[t, j]] @ x[t]
// (the MoE experts of SwitchGLU). Args x, w (one float dtype), idx (int32), out; all
// dense from their offsets. Each element is a dot of a w row and an x row with the same
// arithmetic as KLinear, so it equals the matching Linear result bit for bit.
var KGatherMM = Register(&Kernel{Name: "gather_mm", Family: "gather", CPU: gatherMMCPU, Encode: gatherMMEncode,
	IndexAxis: func(l *Launch) int { return l.Params.(*GatherMMParams).Experts }})

// gatherIndex resolves index i into an axis of length n; ok is false when out of range.
func gatherIndex(i int32, n int) (int, bool) {
	j := int(i)
	if j < 0 {
		j += n
	}
	return j, j >= 0 && j < n
}

// takeIndex resolves index i into an axis of length n, failing l when it is out of
// range.
func takeIndex(l *Launch, i int32, n int) int {
	j, ok := gatherIndex(i, n)
	if !ok {
		launchFail(l, "%s", indexRangeMsg(i, n))
	}
	return j
}

// gatherCopy copies cnt elements of size sz from src element s to dst element d.
func gatherCopy(dst, src []byte, d, s, cnt, sz int) {
	copy(dst[d*sz:(d+cnt)*sz], src[s*sz:(s+cnt)*sz])
}

func takeCPU(l *Launch) {
	p := l.Params.(*TakeParams)
	a, ix, o := &l.Args[0], &l.Args[1], &l.Args[2]
	mmCheckDense("take", a, ix)
	sz := a.DType.Size()
	idx := I32(ix.Data)[ix.Offset : ix.Offset+p.NIdx]
	if a.DType == Float32 && p.Inner == 1 {
		// Picking single elements: skip the per-element byte copies.
		av, ov := F32(a.Data), F32(o.Data)
		for r := 0; r < p.Outer; r++ {
			src := a.Offset + r*p.Axis
			dst := ov[o.Offset+r*p.NIdx : o.Offset+(r+1)*p.NIdx]
			for j, i := range idx {
				dst[j] = av[src+takeIndex(l, i, p.Axis)]
			}
		}
		return
	}
	for r := 0; r < p.Outer; r++ {
		for j, i := range idx {
			k := takeIndex(l, i, p.Axis)
			gatherCopy(o.Data, a.Data, o.Offset+(r*p.NIdx+j)*p.Inner, a.Offset+(r*p.Axis+k)*p.Inner, p.Inner, sz)
		}
	}
}

func takeAlongCPU(l *Launch) {
	p := l.Params.(*TakeAlongParams)
	a, ix, o := &l.Args[0], &l.Args[1], &l.Args[2]
	mmCheckDense("take_along_axis", a, ix)
	sz := a.DType.Size()
	n := p.Outer * p.M * p.Inner
	idx := I32(ix.Data)[ix.Offset : ix.Offset+n]
	for r := 0; r < p.Outer; r++ {
		for j := 0; j < p.M; j++ {
			row := (r*p.M + j) * p.Inner
			for i := 0; i < p.Inner; i++ {
				k := takeIndex(l, idx[row+i], p.Axis)
				gatherCopy(o.Data, a.Data, o.Offset+row+i, a.Offset+(r*p.Axis+k)*p.Inner+i, 1, sz)
			}
		}
	}
}

func gatherMMCPU(l *Launch) {
	p := l.Params.(*GatherMMParams)
	x, w, ix, o := &l.Args[0], &l.Args[1], &l.Args[2], &l.Args[3]
	mmCheckDense("gather_mm", x, w, ix)
	idx := I32(ix.Data)[ix.Offset : ix.Offset+p.Rows*p.TopK]
	mat := p.O * p.K
	if x.DType == Float32 && w.DType == Float32 && o.DType == Float32 {
		xs, ws, os := F32(x.Data), F32(w.Data), F32(o.Data)
		for t := 0; t < p.Rows; t++ {
			xr := xs[x.Offset+t*p.K : x.Offset+(t+1)*p.K]
			for j := 0; j < p.TopK; j++ {
				or := os[o.Offset+(t*p.TopK+j)*p.O : o.Offset+(t*p.TopK+j+1)*p.O]
				e := takeIndex(l, idx[t*p.TopK+j], p.Experts)
				we := ws[w.Offset+e*mat : w.Offset+(e+1)*mat]
				for n := range or {
					or[n] = mmDot(xr, we[n*p.K:(n+1)*p.K])
				}
			}
		}
		return
	}
	// Half types: widen the row and the expert matrix, same arithmetic, round on store.
	xr := make([]float32, p.K)
	we := make([]float32, mat)
	for t := 0; t < p.Rows; t++ {
		mmWiden(xr, x, x.Offset+t*p.K)
		for j := 0; j < p.TopK; j++ {
			base := o.Offset + (t*p.TopK+j)*p.O
			e := takeIndex(l, idx[t*p.TopK+j], p.Experts)
			mmWiden(we, w, w.Offset+e*mat)
			for n := 0; n < p.O; n++ {
				Store(o.DType, o.Data, base+n, float64(mmDot(xr, we[n*p.K:(n+1)*p.K])))
			}
		}
	}
}

// gatherEntry names a copy-only gather entry by element width: the MSL moves bits, so
// one entry per size serves every dtype of that size.
func gatherEntry(base string, dt DType) string {
	switch dt.Size() {
	case 4:
		return base + "_b32"
	case 2:
		return base + "_b16"
	}
	return base + "_b8"
}

func takeEncode(l *Launch, e Encoder) {
	p := l.Params.(*TakeParams)
	e.Entry(gatherEntry("take", l.Args[0].DType))
	for i := 0; i < 3; i++ {
		e.SetArg(i, &l.Args[i])
	}
	e.SetBytes(3, mslPack(p))
	e.ErrorWord(4)
	// x = inner position, y = index, z = outer row.
	e.DispatchThreads([3]int{max(p.Inner, 1), max(p.NIdx, 1), max(p.Outer, 1)}, [3]int{LimitThreads(min(max(p.Inner, 1), 64), e), 1, 1})
}

func takeAlongEncode(l *Launch, e Encoder) {
	p := l.Params.(*TakeAlongParams)
	e.Entry(gatherEntry("take_along_axis", l.Args[0].DType))
	for i := 0; i < 3; i++ {
		e.SetArg(i, &l.Args[i])
	}
	e.SetBytes(3, mslPack(p))
	e.ErrorWord(4)
	e.DispatchThreads([3]int{max(p.Inner, 1), max(p.M, 1), max(p.Outer, 1)}, [3]int{LimitThreads(min(max(p.Inner, 1), 64), e), 1, 1})
}

func gatherMMEncode(l *Launch, e Encoder) {
	p := l.Params.(*GatherMMParams)
	e.Entry(mmEntry("gather_mm", l.Out().DType))
	for i := 0; i < 4; i++ {
		e.SetArg(i, &l.Args[i])
	}
	e.SetBytes(4, mslPack(p))
	e.ErrorWord(5)
	// x = output column, y = slot j, z = row t.
	e.DispatchThreads([3]int{max(p.O, 1), max(p.TopK, 1), max(p.Rows, 1)}, [3]int{LimitThreads(min(max(p.O, 1), 64), e), 1, 1})
}

func init() { RegisterSamples("gather", gatherSamples) }

// gatherFillIndex writes valid indices in [-n, n): a third of them negative (wrapped).
// Out-of-range indices fail the launch (see gather_test.go), so samples never hold one.
func gatherFillIndex(rng *rand.Rand, a *Arg, n int) {
	v := I32(a.Data)
	for i := range v {
		v[i] = int32(rng.Intn(n))
		if rng.Intn(3) == 0 {
			v[i] -= int32(n)
		}
	}
}

// gatherSamples covers every element width of take and take_along_axis, index and
// source offsets, and gather_mm in float32 and float16 (with wrapped expert indices).
func gatherSamples(rng *rand.Rand) []*Launch {
	var out []*Launch
	newLaunch := func(k *Kernel, p any, args ...Layout) *Launch {
		l := &Launch{Kernel: k, Params: p, NArgs: len(args)}
		for i, al := range args {
			l.Args[i] = NewArg(al)
		}
		Poison(&l.Args[len(args)-1])
		return l
	}
	withOffset := func(la Layout, off int) Layout { la.Offset = off; return la }
	for _, c := range []struct {
		dt                       DType
		outer, axis, inner, nidx int
	}{
		{Float32, 1, 11, 6, 5}, {Float32, 3, 7, 1, 9}, {Int32, 2, 4, 3, 4},
		{Float16, 2, 5, 5, 3}, {Bool, 3, 6, 2, 4},
	} {
		p := &TakeParams{Outer: c.outer, Axis: c.axis, Inner: c.inner, NIdx: c.nidx}
		l := newLaunch(KTake, p, withOffset(Contiguous(c.dt, c.outer, c.axis, c.inner), 3),
			withOffset(Contiguous(Int32, c.nidx), 1), Contiguous(c.dt, c.outer, c.nidx, c.inner))
		Fill(rng, &l.Args[0], -4, 4)
		gatherFillIndex(rng, &l.Args[1], c.axis)
		out = append(out, l)

		pa := &TakeAlongParams{Outer: c.outer, Axis: c.axis, M: c.nidx, Inner: c.inner}
		la := newLaunch(KTakeAlongAxis, pa, Contiguous(c.dt, c.outer, c.axis, c.inner),
			withOffset(Contiguous(Int32, c.outer, c.nidx, c.inner), 2), Contiguous(c.dt, c.outer, c.nidx, c.inner))
		Fill(rng, &la.Args[0], -4, 4)
		gatherFillIndex(rng, &la.Args[1], c.axis)
		out = append(out, la)
	}
	for _, c := range []struct {
		dt                    DType
		rows, topk, exp, o, k int
	}{
		{Float32, 1, 2, 8, 64, 64}, {Float32, 5, 3, 4, 7, 13}, {Float16, 3, 2, 3, 5, 9},
	} {
		p := &GatherMMParams{Rows: c.rows, TopK: c.topk, Experts: c.exp, O: c.o, K: c.k}
		l := newLaunch(KGatherMM, p, withOffset(Contiguous(c.dt, c.rows, c.k), 1),
			Contiguous(c.dt, c.exp, c.o, c.k), Contiguous(Int32, c.rows, c.topk), Contiguous(c.dt, c.rows, c.topk, c.o))
		Fill(rng, &l.Args[0], -1, 1)
		Fill(rng, &l.Args[1], -1, 1)
		gatherFillIndex(rng, &l.Args[2], c.exp)
		out = append(out, l)
	}
	return out
}
