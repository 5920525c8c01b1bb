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

// Helpers shared by the reduce, softmax, norm, rope and sdpa kernel tests: both twins of
// every sample launch are checked against a float64 reference written here.

// emuEncoder runs an Encode through the MSL emulation harness, binding each argument's
// bytes from its element offset on, as the Metal device does.
type emuEncoder struct {
	family, entry string
	bufs          []msltest.Buffer        // bound for the next dispatch
	copies        map[*kernels.Arg][]byte // each argument's copy, kept between dispatches
	scratch       map[int][]byte
	out           *kernels.Arg
	err           error
	ran           bool
}

func (e *emuEncoder) Entry(name string) { e.entry = name }

func (e *emuEncoder) ErrorWord(i int) {
	e.bufs = append(e.bufs, msltest.Buffer{Index: i, Data: make([]byte, kernels.ErrorWordSize)},
		msltest.Buffer{Index: i + 1, Data: make([]byte, 4)})
}

func (e *emuEncoder) SetArg(i int, a *kernels.Arg) {
	if e.copies == nil {
		e.copies = map[*kernels.Arg][]byte{}
	}
	c, ok := e.copies[a]
	if !ok {
		c = append([]byte(nil), a.Data[a.Offset*a.DType.Size():]...)
		e.copies[a] = c
	}
	e.bufs = append(e.bufs, msltest.Buffer{Index: i, Data: c})
}

// Scratch binds the launch's scratch at i, the same bytes at every dispatch.
func (e *emuEncoder) Scratch(i, n int) {
	if e.scratch == nil {
		e.scratch = map[int][]byte{}
	}
	if len(e.scratch[i]) < n {
		e.scratch[i] = make([]byte, n)
	}
	e.bufs = append(e.bufs, msltest.Buffer{Index: i, Data: e.scratch[i][:n]})
}

func (e *emuEncoder) SetBytes(i int, b []byte) {
	e.bufs = append(e.bufs, msltest.Buffer{Index: i, Data: append([]byte(nil), b...)})
}

func (e *emuEncoder) run(d msltest.Dispatch) {
	e.ran = true
	if e.err == nil {
		e.err = runFamily(e.family, e.entry, d, e.bufs)
	}
	e.bufs = nil
}

func (e *emuEncoder) DispatchThreads(grid, group [3]int) {
	e.run(msltest.Dispatch{Threads: grid, Group: group})
}

func (e *emuEncoder) DispatchThreadgroups(groups, group [3]int) {
	e.run(msltest.Dispatch{Groups: groups, Group: group})
}

// emuRun runs l's MSL twin and returns its output elements as float64.
func emuRun(t *testing.T, l *kernels.Launch) []float64 {
	t.Helper()
	e := &emuEncoder{family: l.Kernel.Family, out: l.Out()}
	l.Kernel.Encode(l, e)
	require.True(t, e.ran, "Encode dispatched")
	require.NoError(t, e.err)
	o := l.Out()
	data, ok := e.copies[o]
	require.True(t, ok, "Encode bound the output")
	got := make([]float64, o.Size())
	for i := range got {
		got[i] = kernels.Load(o.DType, data, i)
	}
	return got
}

// goRun poisons l's output, runs the Go twin and returns the output elements.
func goRun(l *kernels.Launch) []float64 {
	o := l.Out()
	kernels.Poison(o)
	kernels.Run(l)
	return dense(o)
}

// dense reads an argument's elements in row-major order through its strides.
func dense(a *kernels.Arg) []float64 {
	n := a.Size()
	out := make([]float64, n)
	var idx [kernels.MaxDims]int
	for i := 0; i < n; i++ {
		off := a.Offset
		for d := 0; d < a.NDim; d++ {
			off += idx[d] * a.Strides[d]
		}
		out[i] = kernels.Load(a.DType, a.Data, off)
		for d := a.NDim - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < a.Shape[d] {
				break
			}
			idx[d] = 0
		}
	}
	return out
}

// ref is a float64 reference result: the expected values and, per element, the
// magnitude the float32 rounding errors scale with (0 demands an exact match); mslScale,
// when set, replaces scale for the MSL twin (whose float arithmetic may err differently).
type ref struct {
	want, scale, mslScale []float64
}

// requireClose checks |got - want| <= tol * scale elementwise (NaN must meet NaN) and
// returns the largest error in units of scale.
func requireClose(t *testing.T, r ref, got []float64, tol float64, what string) float64 {
	t.Helper()
	require.Len(t, got, len(r.want), what)
	worst := 0.0
	for i, w := range r.want {
		g := got[i]
		if math.IsNaN(w) || math.IsNaN(g) {
			require.Truef(t, math.IsNaN(w) && math.IsNaN(g), "%s [%d]: got %v, want %v", what, i, g, w)
			continue
		}
		if math.IsInf(w, 0) || r.scale[i] == 0 {
			require.Equalf(t, w, g, "%s [%d]", what, i)
			continue
		}
		e := math.Abs(g-w) / r.scale[i]
		worst = max(worst, e)
		require.LessOrEqualf(t, e, tol, "%s [%d]: got %v, want %v (scale %v)", what, i, g, w, r.scale[i])
	}
	return worst
}

// checkTwins runs every sample launch of family through both twins and compares each
// with the reference: the Go twin within goTol, the MSL twin (float arithmetic) within
// mslTol. The MSL twin is skipped when g++ is missing.
func checkTwins(t *testing.T, family string, reference func(l *kernels.Launch) ref, goTol, mslTol float64) {
	t.Helper()
	launches := kernels.Samples(rand.New(rand.NewSource(11)))[family]
	require.NotEmpty(t, launches, "samples of %s", family)
	emu := msltest.Available() == nil
	worstGo, worstMSL := 0.0, 0.0
	for i, l := range launches {
		what := fmt.Sprintf("%s sample %d (%s %v %+v)", family, i, l.Kernel.Name, l.Args[0].Dims(), l.Params)
		r := reference(l)
		worstGo = max(worstGo, requireClose(t, r, goRun(l), goTol, what+" Go twin"))
		if emu {
			kernels.Poison(l.Out())
			rm := r
			if r.mslScale != nil {
				rm.scale = r.mslScale
			}
			worstMSL = max(worstMSL, requireClose(t, rm, emuRun(t, l), mslTol, what+" MSL twin"))
		}
	}
	t.Logf("%s: %d samples, worst error / scale: Go %.3g, MSL %.3g (emulated: %v)",
		family, len(launches), worstGo, worstMSL, emu)
}

// rows splits a dense [.., cols] array into rows.
func rows(x []float64, cols int) [][]float64 {
	var out [][]float64
	for r := 0; r*cols < len(x) || (cols == 0 && r == 0); r++ {
		out = append(out, x[r*cols:r*cols+cols])
	}
	return out
}

// reduceRef is the naive float64 reduction of each row, with the error scale: the sum
// of magnitudes for sums and means, |result| + 1 for logsumexp, exact for the rest.
func reduceRef(l *kernels.Launch) ref {
	in := &l.Args[0]
	cols := in.Shape[in.NDim-1]
	var r ref
	name := l.Kernel.Name
	for _, x := range rows(dense(in), cols) {
		var v, sc float64
		switch name {
		case "reduce_sum", "reduce_mean":
			for _, e := range x {
				v += e
				sc += math.Abs(e)
			}
			if name == "reduce_mean" {
				v /= float64(len(x))
				sc /= float64(len(x))
			}
		case "reduce_max", "reduce_min":
			v = x[0]
			for _, e := range x {
				switch {
				case math.IsNaN(v):
				case math.IsNaN(e), name == "reduce_max" && e > v, name == "reduce_min" && e < v:
					v = e
				}
			}
		case "reduce_argmax":
			for i, e := range x {
				if math.IsNaN(e) {
					v = float64(i)
					break
				}
				if e > x[int(v)] {
					v = float64(i)
				}
			}
		case "reduce_logsumexp":
			m := math.Inf(-1)
			for _, e := range x {
				m = math.Max(m, e)
			}
			s := 0.0
			for _, e := range x {
				s += math.Exp(e - m)
			}
			v = m + math.Log(s)
			sc = math.Abs(v) + 1
		default:
			panic(name)
		}
		if !in.DType.IsFloat() {
			sc = 0 // integer sums are exact
		}
		r.want = append(r.want, v)
		r.scale = append(r.scale, sc)
	}
	return r
}

// TestReduceTwins: every reduction's Go twin within 2^-23 of the float64 result's scale
// (float64 accumulation, one rounding), its MSL twin within 16 float32 epsilons (float
// accumulation over up to ~1000 terms per thread chain and tree).
func TestReduceTwins(t *testing.T) {
	checkTwins(t, "reduce", reduceRef, 1.2e-7, 2e-6)
}

func TestReduceSamplesCoverNaNAndTies(t *testing.T) {
	// The argmax sample with a NaN in row 1 and ties in row 0 must pick index 9 and the
	// first of the tied maxima.
	for _, l := range kernels.Samples(rand.New(rand.NewSource(11)))["reduce"] {
		if l.Kernel.Name != "reduce_argmax" || l.Args[0].DType != kernels.Float32 || l.Args[0].Shape[1] != 130 {
			continue
		}
		x := kernels.F32(l.Args[0].Data)
		got := goRun(l)
		require.Equal(t, 9.0, got[1], "NaN counts as the maximum")
		best := 0
		for i, v := range x[:130] {
			if v > x[best] {
				best = i
			}
		}
		require.Equal(t, float64(best), got[0])
		return
	}
	t.Fatal("no argmax sample with 130 columns")
}

func TestReduceEmptyRows(t *testing.T) {
	// [2, 0]: sums are 0, max -Inf, min +Inf, mean NaN, logsumexp -Inf.
	want := map[string]float64{"sum": 0, "max": math.Inf(-1), "min": math.Inf(1), "mean": math.NaN(), "logsumexp": math.Inf(-1)}
	for name, w := range want {
		l := &kernels.Launch{Kernel: kernels.ReduceKernel(reduceOpNamed(name)), NArgs: 2}
		l.Args[0] = kernels.NewArg(kernels.Contiguous(kernels.Float32, 2, 0))
		l.Args[1] = kernels.NewArg(kernels.Contiguous(kernels.Float32, 2))
		got := goRun(l)
		for _, g := range got {
			if math.IsNaN(w) {
				require.True(t, math.IsNaN(g), name)
			} else {
				require.Equal(t, w, g, name)
			}
		}
	}
}

func reduceOpNamed(name string) *kernels.ReduceOp {
	for _, op := range kernels.ReduceOps {
		if op.Name == name {
			return op
		}
	}
	panic(name)
}

func TestRowThreads(t *testing.T) {
	for cols, want := range map[int]int{0: 32, 1: 32, 64: 32, 128: 32, 129: 64, 512: 128, 4096: 1024, 150000: 1024} {
		require.Equal(t, want, kernels.RowThreads(cols), "cols %d", cols)
	}
}
