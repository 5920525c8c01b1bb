package kernels_test

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/kernels"
	"github.com/ingotml/ingot/kernels/msltest"
)

// mmSamples returns the registered sample launches of one family.
func mmSamples(t *testing.T, family string, seed int64) []*kernels.Launch {
	t.Helper()
	ls := kernels.Samples(rand.New(rand.NewSource(seed)))[family]
	require.NotEmpty(t, ls, "family %s registers samples", family)
	return ls
}

// mmLoad returns element off+i of a for i < n, as float64.
func mmLoad(a *kernels.Arg, off, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = kernels.Load(a.DType, a.Data, off+i)
	}
	return out
}

// mmDotRef is a float64 dot product and the sum of |terms|, the scale its float32
// rounding error is proportional to.
func mmDotRef(x, w []float64) (dot, scale float64) {
	for i := range x {
		dot += x[i] * w[i]
		scale += math.Abs(x[i] * w[i])
	}
	return dot, scale
}

// mmCheckDots compares float outputs with float64 references: the error is measured
// against the dot's scale (sum of |terms|), 1e-6 for float32 plus the final rounding of
// the output dtype. A NaN (an unwritten, poisoned element) always fails.
func mmCheckDots(t *testing.T, what string, dt kernels.DType, got, want, scale []float64) {
	t.Helper()
	require.Len(t, got, len(want))
	round := 0.0
	switch dt {
	case kernels.Float16:
		round = 1.0 / 2048
	case kernels.BFloat16:
		round = 1.0 / 256
	}
	worst := 0.0
	for i := range want {
		require.Falsef(t, math.IsNaN(got[i]), "%s: element %d is NaN", what, i)
		err := math.Abs(got[i] - want[i])
		tol := 1e-6*scale[i] + round*math.Abs(want[i]) + 1e-30
		require.LessOrEqualf(t, err, tol, "%s: element %d got %v want %v", what, i, got[i], want[i])
		if scale[i] > 0 {
			worst = max(worst, err/scale[i])
		}
	}
	t.Logf("%s: worst error / scale %.2g", what, worst)
}

// linearRef is the float64 reference of a KLinear launch.
func linearRef(l *kernels.Launch) (want, scale []float64) {
	p := l.Params.(*kernels.MatmulParams)
	x, w := &l.Args[0], &l.Args[1]
	for b := 0; b < p.Batch; b++ {
		for m := 0; m < p.M; m++ {
			xr := mmLoad(x, x.Offset+b*p.XStride+m*p.K, p.K)
			for n := 0; n < p.N; n++ {
				d, s := mmDotRef(xr, mmLoad(w, w.Offset+b*p.WStride+n*p.K, p.K))
				want, scale = append(want, d), append(scale, s)
			}
		}
	}
	return want, scale
}

func TestLinearSamplesMatchReference(t *testing.T) {
	for i, l := range mmSamples(t, "matmul", 1) {
		require.Same(t, kernels.KLinear, l.Kernel)
		p := l.Params.(*kernels.MatmulParams)
		want, scale := linearRef(l)
		kernels.Run(l)
		o := l.Out()
		got := mmLoad(o, o.Offset, p.Batch*p.M*p.N)
		mmCheckDots(t, fmt.Sprintf("sample %d %+v %s", i, *p, o.DType), o.DType, got, want, scale)
	}
}

// mmLinearLaunch builds a float32 KLinear launch over x [m, k] and w [n, k].
func mmLinearLaunch(x, w []float32, m, n, k int) *kernels.Launch {
	l := &kernels.Launch{Kernel: kernels.KLinear, NArgs: 3,
		Params: &kernels.MatmulParams{Batch: 1, M: m, N: n, K: k, XStride: m * k, WStride: n * k}}
	l.Args[0] = kernels.NewArg(kernels.Contiguous(kernels.Float32, m, k))
	l.Args[1] = kernels.NewArg(kernels.Contiguous(kernels.Float32, n, k))
	l.Args[2] = kernels.NewArg(kernels.Contiguous(kernels.Float32, m, n))
	copy(kernels.F32(l.Args[0].Data), x)
	copy(kernels.F32(l.Args[1].Data), w)
	kernels.Poison(&l.Args[2])
	return l
}

func mmRandF32(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.Float64()*2 - 1)
	}
	return v
}

// TestLinearGEMVAndGEMMAgreeBitwise: a row computed alone (the GEMV path of decode) is
// bit-identical to the same row inside a many-row call (the blocked GEMM of prefill),
// for K with and without a tail and N spanning several GEMM tiles.
func TestLinearGEMVAndGEMMAgreeBitwise(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for _, s := range []struct{ m, n, k int }{{9, 33, 64}, {7, 5, 13}, {5, 300, 40}, {4, 3, 1}} {
		x, w := mmRandF32(rng, s.m*s.k), mmRandF32(rng, s.n*s.k)
		all := mmLinearLaunch(x, w, s.m, s.n, s.k)
		kernels.Run(all)
		got := kernels.F32(all.Out().Data)[:s.m*s.n]
		for r := 0; r < s.m; r++ {
			one := mmLinearLaunch(x[r*s.k:(r+1)*s.k], w, 1, s.n, s.k)
			kernels.Run(one)
			require.Equalf(t, kernels.F32(one.Out().Data)[:s.n], got[r*s.n:(r+1)*s.n], "shape %+v row %d", s, r)
		}
	}
}

func TestLinearRejectsStridedInput(t *testing.T) {
	l := mmLinearLaunch(make([]float32, 6), make([]float32, 6), 2, 2, 3)
	l.Args[0].Strides[0], l.Args[0].Strides[1] = 1, 2 // a transposed view
	require.PanicsWithValue(t, "kernels: linear: argument 0 is not dense (shape [2 3], strides [1 2])",
		func() { kernels.Run(l) })
}

// mmEncoder drives an Encode through the MSL emulation harness: it collects bindings
// (offsetting each argument's bytes as the Metal device does) and runs the dispatch.
type mmEncoder struct {
	family, entry string
	bufs          []msltest.Buffer
	args          map[int]*kernels.Arg
	err           error
	ran           bool
	word          []byte              // the error word, once Encode binds it
	tag           uint32              // the launch's position that ErrorWord binds
	order         msltest.ThreadOrder // of the dispatch
}

func (e *mmEncoder) Entry(name string) { e.entry = name }

func (e *mmEncoder) ErrorWord(i int) {
	e.word = make([]byte, kernels.ErrorWordSize)
	e.bufs = append(e.bufs, msltest.Buffer{Index: i, Data: e.word},
		msltest.Buffer{Index: i + 1, Data: binary.LittleEndian.AppendUint32(nil, e.tag)})
}

func (e *mmEncoder) SetArg(i int, a *kernels.Arg) {
	sz := a.DType.Size()
	e.bufs = append(e.bufs, msltest.Buffer{Index: i, Data: append([]byte(nil), a.Data[a.Offset*sz:]...)})
	e.args[i] = a
}

// Scratch binds n fresh bytes (the kernels this encoder runs dispatch once).
func (e *mmEncoder) Scratch(i, n int) {
	e.bufs = append(e.bufs, msltest.Buffer{Index: i, Data: make([]byte, n)})
}

func (e *mmEncoder) SetBytes(i int, b []byte) {
	e.bufs = append(e.bufs, msltest.Buffer{Index: i, Data: append([]byte(nil), b...)})
}

func (e *mmEncoder) run(d msltest.Dispatch) {
	e.ran = true
	d.Order, d.Seed = e.order, 3
	e.err = runFamily(e.family, e.entry, d, e.bufs)
}

func (e *mmEncoder) DispatchThreads(grid, group [3]int) {
	e.run(msltest.Dispatch{Threads: grid, Group: group})
}

func (e *mmEncoder) DispatchThreadgroups(groups, group [3]int) {
	e.run(msltest.Dispatch{Groups: groups, Group: group})
}

// mmRunMSL runs l's MSL twin under emulation and returns the output argument's bytes
// from its offset on.
func mmRunMSL(t *testing.T, l *kernels.Launch) []byte {
	t.Helper()
	e := &mmEncoder{family: l.Kernel.Family, args: map[int]*kernels.Arg{}}
	l.Kernel.Encode(l, e)
	require.True(t, e.ran, "Encode dispatched")
	require.NoError(t, e.err)
	out := l.Out()
	for i, b := range e.bufs {
		if a := e.args[b.Index]; a == out {
			return e.bufs[i].Data
		}
	}
	t.Fatalf("Encode did not bind the output")
	return nil
}

// mmCheckMSLFamily runs every sample of a family on both twins. The MSL twin of linear
// spreads a row's products over a threadgroup (matmul.metal) and adds them in another
// order than the Go twin, so float outputs get the catalog's tolerance; integer outputs
// must be equal.
func mmCheckMSLFamily(t *testing.T, family string) {
	msltest.RequireCompiler(t)
	for i, l := range mmSamples(t, family, 7) {
		out := l.Out()
		sz := out.DType.Size()
		n := out.Size()
		mslOut := mmRunMSL(t, l)[:n*sz]
		kernels.Run(l)
		goOut := out.Data[out.Offset*sz : (out.Offset+n)*sz]
		what := fmt.Sprintf("%s sample %d (%s %+v)", family, i, l.Kernel.Name, l.Params)
		if !out.DType.IsFloat() {
			require.Equal(t, goOut, mslOut, what)
			continue
		}
		for j := 0; j < n; j++ {
			g, m := kernels.Load(out.DType, goOut, j), kernels.Load(out.DType, mslOut, j)
			require.InDeltaf(t, g, m, kernels.TwinTolerance(out.DType)*math.Max(1, math.Abs(g)), "%s element %d", what, j)
		}
	}
}

func TestLinearMSLMatchesGoTwin(t *testing.T) { mmCheckMSLFamily(t, "matmul") }

// mmGFLOPs reports the rate of a benchmark doing flops floating-point operations per op.
func mmGFLOPs(b *testing.B, flops int) {
	b.ReportMetric(float64(flops)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

func BenchmarkLinear(b *testing.B) {
	rng := rand.New(rand.NewSource(3))
	for _, s := range []struct{ m, n, k int }{{1, 192, 64}, {1, 64, 64}, {1, 128, 64}, {7, 192, 64}, {100, 192, 64}} {
		b.Run(fmt.Sprintf("%dx%d@(%dx%d)T", s.m, s.k, s.n, s.k), func(b *testing.B) {
			l := mmLinearLaunch(mmRandF32(rng, s.m*s.k), mmRandF32(rng, s.n*s.k), s.m, s.n, s.k)
			b.ResetTimer()
			for b.Loop() {
				kernels.Run(l)
			}
			mmGFLOPs(b, 2*s.m*s.n*s.k)
		})
	}
}
