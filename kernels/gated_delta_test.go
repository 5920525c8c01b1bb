package kernels_test

import (
	"encoding/binary"
	"math"
	"math/rand"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/kernels"
)

// gdShape reads a gated_delta launch's sizes from its layouts.
type gdShape struct {
	B, T, Hk, Hv, Dk, Dv int
	Masked               bool
}

func gdShapeOf(l *kernels.Launch) gdShape {
	q, v := &l.Args[0], &l.Args[2]
	return gdShape{B: q.Shape[0], T: q.Shape[1], Hk: q.Shape[2], Dk: q.Shape[3],
		Hv: v.Shape[2], Dv: v.Shape[3], Masked: l.NArgs == 8}
}

func rnnArgF64(a *kernels.Arg) []float64 {
	out := make([]float64, a.Size())
	for i := range out {
		out[i] = kernels.Load(a.DType, a.Data, a.Offset+i)
	}
	return out
}

// gatedDeltaRef is the recurrence in float64, straight from the formulas: it returns y
// [B, T, Hv, Dv] and the final state [B, Hv, Dv, Dk].
func gatedDeltaRef(s gdShape, q, k, v, g, beta, state []float64, mask []bool) (y, st []float64) {
	st = append([]float64(nil), state...)
	y = make([]float64, s.B*s.T*s.Hv*s.Dv)
	r := s.Hv / s.Hk
	for b := 0; b < s.B; b++ {
		for t := 0; t < s.T; t++ {
			if mask != nil && !mask[b*s.T+t] {
				continue // y stays 0, the state untouched
			}
			for h := 0; h < s.Hv; h++ {
				kv := ((b*s.T+t)*s.Hk + h/r) * s.Dk
				gi := (b*s.T+t)*s.Hv + h
				S := st[(b*s.Hv+h)*s.Dv*s.Dk:][:s.Dv*s.Dk]
				for i := range S {
					S[i] *= math.Exp(g[gi])
				}
				for dv := 0; dv < s.Dv; dv++ {
					var dot float64
					for j := 0; j < s.Dk; j++ {
						dot += S[dv*s.Dk+j] * k[kv+j]
					}
					delta := (v[gi*s.Dv+dv] - dot) * beta[gi]
					var out float64
					for j := 0; j < s.Dk; j++ {
						S[dv*s.Dk+j] += delta * k[kv+j]
						out += S[dv*s.Dk+j] * q[kv+j]
					}
					y[gi*s.Dv+dv] = out
				}
			}
		}
	}
	return y, st
}

// rnnRelErr is the largest |got-want| relative to want's largest magnitude: the scale of
// float32 rounding in sums and recurrences, which per-element ratios exaggerate for
// entries near 0 (exact zeros are checked separately).
func rnnRelErr(t *testing.T, got []float32, want []float64) float64 {
	t.Helper()
	require.Len(t, got, len(want))
	scale, worst := 0.0, 0.0
	for i, w := range want {
		g := float64(got[i])
		require.False(t, math.IsNaN(g), "element %d not written", i)
		scale = max(scale, math.Abs(w))
		worst = max(worst, math.Abs(g-w))
	}
	require.Positive(t, scale, "an all-zero reference checks nothing")
	return worst / scale
}

func rnnSamples(t *testing.T, family string) []*kernels.Launch {
	t.Helper()
	ls := kernels.Samples(rand.New(rand.NewSource(3)))[family]
	require.NotEmpty(t, ls, "family %s registers no samples", family)
	return ls
}

// TestGatedDeltaSamplesMatchReference runs the Go twin on the registered samples (the
// inputs the MSL twin is checked on) against the float64 recurrence.
func TestGatedDeltaSamplesMatchReference(t *testing.T) {
	for _, l := range rnnSamples(t, "gated_delta") {
		s := gdShapeOf(l)
		var mask []bool
		if s.Masked {
			for _, v := range rnnArgF64(&l.Args[6]) {
				mask = append(mask, v != 0)
			}
		}
		wy, ws := gatedDeltaRef(s, rnnArgF64(&l.Args[0]), rnnArgF64(&l.Args[1]), rnnArgF64(&l.Args[2]),
			rnnArgF64(&l.Args[3]), rnnArgF64(&l.Args[4]), rnnArgF64(&l.Args[5]), mask)
		kernels.Run(l)
		out := kernels.F32(l.Out().Data)[:l.Out().Size()]
		ny := len(wy)
		assert.Less(t, rnnRelErr(t, out[:ny], wy), 1e-6, "y of %+v", s)
		assert.Less(t, rnnRelErr(t, out[ny:], ws), 1e-6, "state of %+v", s)
		for i, m := range mask {
			if !m {
				for _, v := range out[i*s.Hv*s.Dv : (i+1)*s.Hv*s.Dv] {
					require.Equal(t, float32(0), v, "masked step %d of %+v", i, s)
				}
			}
		}
	}
}

// TestGatedDeltaSamplesCover checks the samples reach every case the MSL twin must be
// checked on.
func TestGatedDeltaSamplesCover(t *testing.T) {
	seen := map[string]bool{}
	for _, l := range rnnSamples(t, "gated_delta") {
		s := gdShapeOf(l)
		seen["dk"+strconv.Itoa(s.Dk)] = true
		seen["r"+strconv.Itoa(s.Hv/s.Hk)] = true
		seen["t"+strconv.Itoa(s.T)] = true
		seen["b"+strconv.Itoa(s.B)] = true
		if s.Masked {
			m := l.Args[6].Data[l.Args[6].Offset:][:s.B*s.T]
			for _, v := range m {
				seen["mask"+strconv.Itoa(int(v))] = true
			}
		}
	}
	for _, want := range []string{"dk16", "dk32", "dk128", "r1", "r2", "t1", "t17", "b1", "b2", "mask0", "mask1"} {
		assert.True(t, seen[want], "no sample with %s", want)
	}
}

// rnnRecorder is an Encoder that records what Encode asks for.
type rnnRecorder struct {
	entry    string
	args     map[int]*kernels.Arg
	bytes    map[int][]byte
	groups   [3]int
	group    [3]int
	grid     [3]int
	dispatch string
}

func newRNNRecorder() *rnnRecorder {
	return &rnnRecorder{args: map[int]*kernels.Arg{}, bytes: map[int][]byte{}}
}

func (r *rnnRecorder) Entry(name string)            { r.entry = name }
func (r *rnnRecorder) SetArg(i int, a *kernels.Arg) { r.args[i] = a }
func (r *rnnRecorder) SetBytes(i int, b []byte)     { r.bytes[i] = b }
func (r *rnnRecorder) ErrorWord(i int)              { r.bytes[i] = nil }
func (r *rnnRecorder) Scratch(i, n int)             { r.bytes[i] = make([]byte, n) }
func (r *rnnRecorder) DispatchThreads(grid, group [3]int) {
	r.dispatch, r.grid, r.group = "threads", grid, group
}
func (r *rnnRecorder) DispatchThreadgroups(groups, group [3]int) {
	r.dispatch, r.groups, r.group = "groups", groups, group
}

func rnnInt32s(b []byte) []int32 {
	out := make([]int32, len(b)/4)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

func TestGatedDeltaEncode(t *testing.T) {
	wantEntry := map[int]string{16: "gated_delta_float32_dk32", 32: "gated_delta_float32_dk32",
		33: "gated_delta_float32_dk64", 48: "gated_delta_float32_dk64", 128: "gated_delta_float32_dk128", 256: "gated_delta_float32_dk256"}
	for _, l := range rnnSamples(t, "gated_delta") {
		s := gdShapeOf(l)
		r := newRNNRecorder()
		l.Kernel.Encode(l, r)
		require.Equal(t, wantEntry[s.Dk], r.entry, "%+v", s)
		for i := 0; i < 6; i++ {
			require.Same(t, &l.Args[i], r.args[i])
		}
		masked := int32(0)
		if s.Masked {
			masked = 1
			require.Same(t, &l.Args[6], r.args[6])
		} else {
			require.Same(t, &l.Args[3], r.args[6], "placeholder for the absent mask")
		}
		require.Same(t, l.Out(), r.args[7])
		require.Len(t, r.args, 8)
		require.Equal(t, []int32{int32(s.B), int32(s.T), int32(s.Hk), int32(s.Hv), int32(s.Dk), int32(s.Dv), masked},
			rnnInt32s(r.bytes[8]))
		rows := min(s.Dv, 4)
		require.Equal(t, "groups", r.dispatch)
		require.Equal(t, [3]int{32, rows, 1}, r.group)
		require.Equal(t, [3]int{1, (s.Dv + rows - 1) / rows, s.B * s.Hv}, r.groups)
	}
}
