package kernels_test

import (
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/kernels"
	"github.com/ingotml/ingot/kernels/msltest"
)

// gtResolve is the documented index rule, written independently of the kernels.
func gtResolve(i int32, n int) int {
	switch {
	case int(i) >= 0 && int(i) < n:
		return int(i)
	case int(i) < 0 && int(i) >= -n:
		return int(i) + n
	}
	return -1
}

// gtElem returns the bytes of element i of a (from its offset), or zero bytes for i < 0.
func gtElem(a *kernels.Arg, i int) []byte {
	sz := a.DType.Size()
	if i < 0 {
		return make([]byte, sz)
	}
	o := (a.Offset + i) * sz
	return a.Data[o : o+sz]
}

func gtIndices(a *kernels.Arg, n int) []int32 {
	return kernels.I32(a.Data)[a.Offset : a.Offset+n]
}

// gtRefTake and gtRefTakeAlong build the expected output bytes element by element.
func gtRefTake(l *kernels.Launch) []byte {
	p := l.Params.(*kernels.TakeParams)
	a := &l.Args[0]
	idx := gtIndices(&l.Args[1], p.NIdx)
	var out []byte
	for r := 0; r < p.Outer; r++ {
		for j := 0; j < p.NIdx; j++ {
			k := gtResolve(idx[j], p.Axis)
			for i := 0; i < p.Inner; i++ {
				src := -1
				if k >= 0 {
					src = (r*p.Axis+k)*p.Inner + i
				}
				out = append(out, gtElem(a, src)...)
			}
		}
	}
	return out
}

func gtRefTakeAlong(l *kernels.Launch) []byte {
	p := l.Params.(*kernels.TakeAlongParams)
	a := &l.Args[0]
	idx := gtIndices(&l.Args[1], p.Outer*p.M*p.Inner)
	var out []byte
	for r := 0; r < p.Outer; r++ {
		for j := 0; j < p.M; j++ {
			for i := 0; i < p.Inner; i++ {
				src := -1
				if k := gtResolve(idx[(r*p.M+j)*p.Inner+i], p.Axis); k >= 0 {
					src = (r*p.Axis+k)*p.Inner + i
				}
				out = append(out, gtElem(a, src)...)
			}
		}
	}
	return out
}

func gtRefGatherMM(l *kernels.Launch) (want, scale []float64) {
	p := l.Params.(*kernels.GatherMMParams)
	x, w := &l.Args[0], &l.Args[1]
	idx := gtIndices(&l.Args[2], p.Rows*p.TopK)
	for t := 0; t < p.Rows; t++ {
		xr := mmLoad(x, x.Offset+t*p.K, p.K)
		for j := 0; j < p.TopK; j++ {
			e := gtResolve(idx[t*p.TopK+j], p.Experts)
			for n := 0; n < p.O; n++ {
				if e < 0 {
					want, scale = append(want, 0), append(scale, 0)
					continue
				}
				d, s := mmDotRef(xr, mmLoad(w, w.Offset+(e*p.O+n)*p.K, p.K))
				want, scale = append(want, d), append(scale, s)
			}
		}
	}
	return want, scale
}

func gtOutBytes(l *kernels.Launch) []byte {
	o := l.Out()
	sz := o.DType.Size()
	return o.Data[o.Offset*sz : (o.Offset+o.Size())*sz]
}

func TestGatherSamplesMatchReference(t *testing.T) {
	counts := map[string]int{}
	zeroed, wrapped := 0, 0
	for i, l := range mmSamples(t, "gather", 11) {
		what := fmt.Sprintf("sample %d %s %+v %s", i, l.Kernel.Name, l.Params, l.Out().DType)
		counts[l.Kernel.Name]++
		var nIdx, axisLen int
		switch p := l.Params.(type) {
		case *kernels.TakeParams:
			nIdx, axisLen = p.NIdx, p.Axis
		case *kernels.TakeAlongParams:
			nIdx, axisLen = p.Outer*p.M*p.Inner, p.Axis
		case *kernels.GatherMMParams:
			nIdx, axisLen = p.Rows*p.TopK, p.Experts
		}
		idxArg := 1
		if l.Kernel == kernels.KGatherMM {
			idxArg = 2
		}
		for _, v := range gtIndices(&l.Args[idxArg], nIdx) {
			if gtResolve(v, axisLen) < 0 {
				zeroed++
			} else if v < 0 {
				wrapped++
			}
		}
		switch l.Kernel {
		case kernels.KTake:
			want := gtRefTake(l)
			kernels.Run(l)
			require.Equal(t, want, gtOutBytes(l), what)
		case kernels.KTakeAlongAxis:
			want := gtRefTakeAlong(l)
			kernels.Run(l)
			require.Equal(t, want, gtOutBytes(l), what)
		case kernels.KGatherMM:
			want, scale := gtRefGatherMM(l)
			kernels.Run(l)
			o := l.Out()
			mmCheckDots(t, what, o.DType, mmLoad(o, o.Offset, o.Size()), want, scale)
		default:
			t.Fatalf("unexpected kernel %s in the gather samples", l.Kernel.Name)
		}
	}
	require.Equal(t, map[string]int{"take": 5, "take_along_axis": 5, "gather_mm": 3}, counts)
	require.Zero(t, zeroed, "out-of-range indices fail the launch: samples hold none")
	require.Positive(t, wrapped, "samples exercise negative indices")
}

// gtGatherMMLaunch builds a float32 gather_mm launch.
func gtGatherMMLaunch(x, w []float32, idx []int32, rows, topk, e, o, k int) *kernels.Launch {
	l := &kernels.Launch{Kernel: kernels.KGatherMM, NArgs: 4,
		Params: &kernels.GatherMMParams{Rows: rows, TopK: topk, Experts: e, O: o, K: k}}
	l.Args[0] = kernels.NewArg(kernels.Contiguous(kernels.Float32, rows, k))
	l.Args[1] = kernels.NewArg(kernels.Contiguous(kernels.Float32, e, o, k))
	l.Args[2] = kernels.NewArg(kernels.Contiguous(kernels.Int32, rows, topk))
	l.Args[3] = kernels.NewArg(kernels.Contiguous(kernels.Float32, rows, topk, o))
	copy(kernels.F32(l.Args[0].Data), x)
	copy(kernels.F32(l.Args[1].Data), w)
	copy(kernels.I32(l.Args[2].Data), idx)
	kernels.Poison(&l.Args[3])
	return l
}

// TestGatherMMEqualsLinearPerExpert: each (row, slot) equals the linear kernel run on
// that row and that expert's matrix, bit for bit (one dot arithmetic for both).
func TestGatherMMEqualsLinearPerExpert(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	const rows, topk, e, o, k = 3, 2, 8, 64, 64
	x, w := mmRandF32(rng, rows*k), mmRandF32(rng, e*o*k)
	idx := []int32{3, 7, 0, -1, 5, 5}
	l := gtGatherMMLaunch(x, w, idx, rows, topk, e, o, k)
	kernels.Run(l)
	got := kernels.F32(l.Out().Data)[:rows*topk*o]
	for t0 := 0; t0 < rows; t0++ {
		for j := 0; j < topk; j++ {
			ex := gtResolve(idx[t0*topk+j], e)
			lin := mmLinearLaunch(x[t0*k:(t0+1)*k], w[ex*o*k:(ex+1)*o*k], 1, o, k)
			kernels.Run(lin)
			require.Equalf(t, kernels.F32(lin.Out().Data)[:o], got[(t0*topk+j)*o:(t0*topk+j+1)*o], "row %d slot %d", t0, j)
		}
	}
}

func TestGatherMSLMatchesGoTwin(t *testing.T) { mmCheckMSLFamily(t, "gather") }

// gtTakeLaunch is a take launch over a dense [outer, axis, inner] table of dt (zeros)
// with these indices, its output dense [outer, len(idx), inner].
func gtTakeLaunch(dt kernels.DType, outer, axis, inner int, idx ...int32) *kernels.Launch {
	l := &kernels.Launch{Kernel: kernels.KTake, NArgs: 3,
		Params: &kernels.TakeParams{Outer: outer, Axis: axis, Inner: inner, NIdx: len(idx)}}
	l.Args[0] = kernels.NewArg(kernels.Contiguous(dt, outer, axis, inner))
	l.Args[1] = kernels.NewArg(kernels.Contiguous(kernels.Int32, len(idx)))
	l.Args[2] = kernels.NewArg(kernels.Contiguous(dt, outer, len(idx), inner))
	copy(kernels.I32(l.Args[1].Data), idx)
	return l
}

// TestGatherOutOfRangeFailsLaunch: every gather kernel stops with a *LaunchError naming
// the index and the axis, instead of writing a zero row.
func TestGatherOutOfRangeFailsLaunch(t *testing.T) {
	take := gtTakeLaunch(kernels.Float32, 1, 128, 4, 3, 128)
	require.PanicsWithError(t, "kernels: take: index 128 out of range for an axis of length 128", func() { kernels.Run(take) })
	copy(kernels.I32(take.Args[1].Data), []int32{-129, 0})
	require.PanicsWithError(t, "kernels: take: index -129 out of range for an axis of length 128", func() { kernels.Run(take) })
	take.Params = &kernels.TakeParams{Outer: 4, Axis: 128, Inner: 1, NIdx: 2} // the single-element path
	take.Args[2] = kernels.NewArg(kernels.Contiguous(kernels.Float32, 4, 2))
	require.PanicsWithError(t, "kernels: take: index -129 out of range for an axis of length 128", func() { kernels.Run(take) })

	along := &kernels.Launch{Kernel: kernels.KTakeAlongAxis, NArgs: 3,
		Params: &kernels.TakeAlongParams{Outer: 1, Axis: 5, M: 2, Inner: 1}}
	along.Args[0] = kernels.NewArg(kernels.Contiguous(kernels.Int32, 5, 1))
	along.Args[1] = kernels.NewArg(kernels.Contiguous(kernels.Int32, 2, 1))
	along.Args[2] = kernels.NewArg(kernels.Contiguous(kernels.Int32, 2, 1))
	copy(kernels.I32(along.Args[1].Data), []int32{-5, 5})
	require.PanicsWithError(t, "kernels: take_along_axis: index 5 out of range for an axis of length 5", func() { kernels.Run(along) })

	mm := gtGatherMMLaunch(make([]float32, 4), make([]float32, 2*3*4), []int32{1, 2}, 1, 2, 2, 3, 4)
	require.PanicsWithError(t, "kernels: gather_mm: index 2 out of range for an axis of length 2", func() { kernels.Run(mm) })
}

func BenchmarkGatherMM(b *testing.B) {
	rng := rand.New(rand.NewSource(6))
	const rows, topk, e, o, k = 1, 2, 8, 64, 64
	l := gtGatherMMLaunch(mmRandF32(rng, rows*k), mmRandF32(rng, e*o*k), []int32{6, 1}, rows, topk, e, o, k)
	b.Run("T1_k2_E8_O64_K64", func(b *testing.B) {
		for b.Loop() {
			kernels.Run(l)
		}
		mmGFLOPs(b, 2*rows*topk*o*k)
	})
}

func BenchmarkTake(b *testing.B) {
	// Embedding lookup of one token from a [128, 64] table.
	l := gtTakeLaunch(kernels.Float32, 1, 128, 64, 77)
	b.Run("embed_1x64", func(b *testing.B) {
		for b.Loop() {
			kernels.Run(l)
		}
	})
}

// TestGatherMSLReportsOutOfRange: the MSL twin of every gather kernel, given indices out
// of range, writes zeros for them (reading nothing out of bounds) and sets the error
// word so that DeviceError names the launch and the first offending index exactly as
// the Go twin stops, in every thread order.
func TestGatherMSLReportsOutOfRange(t *testing.T) {
	msltest.RequireCompiler(t)
	take := gtTakeLaunch(kernels.Float32, 2, 6, 3, 1, -6, 9, 5, -7)

	along := &kernels.Launch{Kernel: kernels.KTakeAlongAxis, NArgs: 3,
		Params: &kernels.TakeAlongParams{Outer: 1, Axis: 5, M: 3, Inner: 2}}
	along.Args[0] = kernels.NewArg(kernels.Contiguous(kernels.Float16, 1, 5, 2))
	along.Args[1] = kernels.NewArg(kernels.Contiguous(kernels.Int32, 1, 3, 2))
	along.Args[2] = kernels.NewArg(kernels.Contiguous(kernels.Float16, 1, 3, 2))
	copy(kernels.I32(along.Args[1].Data), []int32{4, -5, 0, -6, 5, 2})

	mm := gtGatherMMLaunch(make([]float32, 2*4), make([]float32, 3*2*4), []int32{0, 3, -4, 1}, 2, 2, 3, 2, 4)
	for _, l := range []*kernels.Launch{take, along, mm} {
		kernels.Fill(rand.New(rand.NewSource(3)), l.In(0), 1, 2) // no zeros: a zero output is a written one
		if l.Kernel == kernels.KGatherMM {
			kernels.Fill(rand.New(rand.NewSource(4)), l.In(1), 1, 2)
		}
		idxArg := l.In(l.NArgs - 2)
		axis := l.Kernel.IndexAxis(l)
		// The Go twin's error, and which index entries are out of range.
		var want error
		func() {
			defer func() { want, _ = recover().(error) }()
			kernels.Run(l)
		}()
		require.Error(t, want, l.Kernel.Name)
		bad := map[int]bool{}
		for j, i := range kernels.I32(idxArg.Data) {
			if i >= int32(axis) || i < -int32(axis) {
				bad[j] = true
			}
		}
		require.Len(t, bad, 2, "%s: two entries out of range", l.Kernel.Name)
		for _, order := range msltest.Orders {
			kernels.Poison(l.Out())
			e := &mmEncoder{family: l.Kernel.Family, args: map[int]*kernels.Arg{}, tag: 2, order: order}
			l.Kernel.Encode(l, e)
			require.NoError(t, e.err)
			out := e.bufs[l.NArgs-1].Data
			batch := []kernels.Launch{*take, *along, *l}
			require.EqualError(t, kernels.DeviceError(e.word, batch), want.Error(), "%s, %v order", l.Kernel.Name, order)
			for n := 0; n < l.Out().Size(); n++ {
				v := kernels.Load(l.Out().DType, out, n)
				require.Falsef(t, math.IsNaN(v), "%s element %d unwritten", l.Kernel.Name, n)
				require.Equalf(t, bad[gtIndexEntry(l, n)], v == 0, "%s element %d: %v (index entry out of range: %v)",
					l.Kernel.Name, n, v, bad[gtIndexEntry(l, n)])
			}
		}
	}
}

// gtIndexEntry is the entry of l's index array that output element n reads.
func gtIndexEntry(l *kernels.Launch, n int) int {
	switch p := l.Params.(type) {
	case *kernels.TakeParams:
		return n / p.Inner % p.NIdx
	case *kernels.TakeAlongParams:
		return n
	case *kernels.GatherMMParams:
		return n / p.O
	}
	panic("not a gather launch")
}
