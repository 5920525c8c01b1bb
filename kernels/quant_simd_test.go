package kernels

import (
	"fmt"
	"math"
	"math/rand"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"
)

// qsimdMatrix builds a random [rows, cols] quantized matrix whose packed words, scales
// and biases all start at an offset into their buffers, scales of dtype dt.
func qsimdMatrix(rng *rand.Rand, rows, cols, bits, group int, dt DType) qMatrix {
	w, s, b := qsimdArgs(rng, rows, cols, bits, group, dt)
	return qBind("qsimd test", &w, &s, &b, rows, cols, bits, group)
}

// qsimdArgs is qsimdMatrix's packed words, scales and biases, unbound.
func qsimdArgs(rng *rand.Rand, rows, cols, bits, group int, dt DType) (Arg, Arg, Arg) {
	words, groups, err := CheckQuant(cols, bits, group)
	if err != nil {
		panic(err)
	}
	const wOff, sOff = 3, 5
	w := NewArg(Contiguous(UInt32, rows, words))
	w.Offset = wOff
	w.Data = make([]byte, (wOff+rows*words)*4)
	rng.Read(w.Data)
	mk := func(lo, hi float64) Arg {
		a := NewArg(Contiguous(dt, rows, groups))
		a.Offset = sOff
		a.Data = make([]byte, (sOff+rows*groups)*dt.Size())
		Fill(rng, &a, lo, hi)
		for i := sOff; i < sOff+rows*groups; i++ {
			if rng.Intn(20) == 0 { // some exact zeros and signed magnitudes far apart
				Store(dt, a.Data, i, []float64{0, -3e3, 7e-5}[rng.Intn(3)])
			}
		}
		return a
	}
	return w, mk(-0.02, 0.02), mk(-0.5, 0.5)
}

// TestQuantDotRowsMatchesScalar checks dotRows (eight rows per assembly call on amd64
// with AVX2) against qMatrix.dot, the definition, bit for bit: every bit width and
// group size, every scale dtype, row counts around the 8-row block, a block starting
// at an odd row, x starting off any vector alignment, special values in x.
func TestQuantDotRowsMatchesScalar(t *testing.T) {
	t.Logf("useAVX2 = %v", useAVX2)
	rng := rand.New(rand.NewSource(12))
	for _, bits := range []int{2, 3, 4, 5, 6, 8} {
		for _, group := range []int{32, 64, 128} {
			for _, dt := range []DType{Float32, Float16, BFloat16} {
				for _, n := range []int{1, 7, 8, 9, 17, 40} {
					for _, r0 := range []int{0, 3} {
						special := rng.Intn(3) == 0
						cols := group * (1 + rng.Intn(4))
						m := qsimdMatrix(rng, r0+n+rng.Intn(3), cols, bits, group, dt)
						q := new(qSIMD).init(&m)
						xs := simdRandRow(rng, cols+1, special)[1:] // 4 bytes past an allocation start
						sums := make([]float32, m.groups)
						m.groupSums(xs, sums)
						out := make([]float32, n)
						m.dotRows(xs, sums, r0, out, q)
						for i, got := range out {
							want := m.dot(xs, sums, r0+i)
							require.Truef(t, sameBits(want, got), "bits %d group %d %s cols %d rows %d+%d row %d: %v (%#x), want %v (%#x)",
								bits, group, dt, cols, r0, n, i, got, math.Float32bits(got), want, math.Float32bits(want))
						}
					}
				}
			}
		}
	}
}

// TestQuantAsmCoversEveryWidth makes sure the comparison above exercises the assembly:
// on amd64 with AVX2 every bit width and group size takes it.
func TestQuantAsmCoversEveryWidth(t *testing.T) {
	if runtime.GOARCH != "amd64" || !useAVX2 {
		t.Skipf("no AVX2 on %s: the portable loops run", runtime.GOARCH)
	}
	rng := rand.New(rand.NewSource(1))
	for _, bits := range []int{2, 3, 4, 5, 6, 8} {
		for _, group := range []int{32, 64, 128} {
			m := qsimdMatrix(rng, 8, group, bits, group, Float16)
			require.NotNil(t, new(qSIMD).init(&m), fmt.Sprintf("bits %d group %d", bits, group))
		}
	}
}

// TestF16ToF32F16CExhaustive widens every half bit pattern with the assembly and with
// F16ToF32 and requires the same float32 bits (NaNs included).
func TestF16ToF32F16CExhaustive(t *testing.T) {
	if !useF16C {
		t.Skip("no F16C")
	}
	src := make([]uint16, 1<<16)
	for i := range src {
		src[i] = uint16(i)
	}
	dst := make([]float32, len(src))
	f16ToF32F16C(&dst[0], &src[0], len(src)/8)
	for i, h := range src {
		require.Equalf(t, math.Float32bits(F16ToF32(h)), math.Float32bits(dst[i]), "half %#04x", h)
	}
}

// TestQChunkOffsetsStayInside checks that every chunk word the assembly loads lies
// inside its 16-code super-block and holds the chunk's four codes whole, so no load
// reads past the end of a row.
func TestQChunkOffsetsStayInside(t *testing.T) {
	for _, bits := range []int{2, 3, 4, 5, 6, 8} {
		for k := range 4 {
			o := qChunkOffset(bits, k)
			shift := 4*bits*k - 8*o
			require.GreaterOrEqualf(t, o, 0, "bits %d chunk %d", bits, k)
			require.LessOrEqualf(t, o+4, 2*bits, "bits %d chunk %d: word at byte %d", bits, k, o)
			require.GreaterOrEqualf(t, shift, 0, "bits %d chunk %d", bits, k)
			require.LessOrEqualf(t, shift+4*bits, 32, "bits %d chunk %d: codes at bit %d", bits, k, shift)
		}
	}
}

// TestQuantLaunchesMatchScalar runs qmv and qmm (whose assembly path decodes each
// block of eight rows once for all x rows) and compares every output with
// qMatrix.dot bit for bit: every bit width, row counts around the block, several x
// rows, x at an offset into its buffer.
func TestQuantLaunchesMatchScalar(t *testing.T) {
	rng := rand.New(rand.NewSource(13))
	for _, bits := range []int{2, 3, 4, 5, 6, 8} {
		for _, group := range []int{32, 64, 128} {
			for _, kn := range []struct {
				k    *Kernel
				m, n int
			}{{KQMV, 1, 13}, {KQMV, 3, 8}, {KQMM, 4, 8}, {KQMM, 5, 13}, {KQMM, 9, 41}, {KQMM, 4, 5}} {
				dt := []DType{Float32, Float16, BFloat16}[rng.Intn(3)]
				cols := group * (1 + rng.Intn(3))
				w, s, b := qsimdArgs(rng, kn.n, cols, bits, group, dt)
				x := NewArg(Contiguous(Float32, kn.m, cols))
				x.Offset = 1
				x.Data = make([]byte, (1+kn.m*cols)*4)
				copy(F32(x.Data)[1:], simdRandRow(rng, kn.m*cols, rng.Intn(3) == 0))
				l := &Launch{Kernel: kn.k, NArgs: 5, Params: &QuantParams{M: kn.m, N: kn.n, K: cols, Bits: bits, Group: group}}
				l.Args[0], l.Args[1], l.Args[2], l.Args[3] = x, w, s, b
				l.Args[4] = NewArg(Contiguous(Float32, kn.m, kn.n))
				Run(l)
				m := qBind("test", &w, &s, &b, kn.n, cols, bits, group)
				xs, got := F32(x.Data)[1:], F32(l.Args[4].Data)
				sums := make([]float32, m.groups)
				for i := 0; i < kn.m; i++ {
					m.groupSums(xs[i*cols:], sums)
					for r := 0; r < kn.n; r++ {
						want := m.dot(xs[i*cols:(i+1)*cols], sums, r)
						require.Truef(t, sameBits(want, got[i*kn.n+r]), "%s bits %d group %d %s [%d, %d]x[%d, %d]^T at (%d, %d): %v, want %v",
							kn.k.Name, bits, group, dt, kn.m, cols, kn.n, cols, i, r, got[i*kn.n+r], want)
					}
				}
			}
		}
	}
}

// TestQuant16MatchesScalar checks the 16-lane kernels (4 and 8 bits) against
// qMatrix.dot bit for bit at widths whose group counts cross the kernels' 16-group
// blocks (15, 16, 17, 33, 56 groups: none, one full block, tails), every group size
// and scale dtype, through qmv and qmm.
func TestQuant16MatchesScalar(t *testing.T) {
	t.Logf("useAVX512 = %v", qAsm16())
	rng := rand.New(rand.NewSource(16))
	for _, bits := range []int{4, 8} {
		for _, group := range []int{32, 64, 128} {
			for _, groups := range []int{1, 15, 16, 17, 33, 56} {
				for _, dt := range []DType{Float32, Float16, BFloat16} {
					cols := group * groups
					for _, kn := range []struct {
						k    *Kernel
						m, n int
					}{{KQMV, 1, 19}, {KQMM, 3, 21}} {
						w, s, b := qsimdArgs(rng, kn.n, cols, bits, group, dt)
						x := NewArg(Contiguous(Float32, kn.m, cols))
						copy(F32(x.Data), simdRandRow(rng, kn.m*cols, rng.Intn(3) == 0))
						l := &Launch{Kernel: kn.k, NArgs: 5, Params: &QuantParams{M: kn.m, N: kn.n, K: cols, Bits: bits, Group: group}}
						l.Args[0], l.Args[1], l.Args[2], l.Args[3] = x, w, s, b
						l.Args[4] = NewArg(Contiguous(Float32, kn.m, kn.n))
						Run(l)
						m := qBind("test", &w, &s, &b, kn.n, cols, bits, group)
						xs, got := F32(x.Data), F32(l.Args[4].Data)
						sums := make([]float32, m.groups)
						for i := 0; i < kn.m; i++ {
							m.groupSums(xs[i*cols:], sums)
							for r := 0; r < kn.n; r++ {
								want := m.dot(xs[i*cols:(i+1)*cols], sums, r)
								require.Truef(t, sameBits(want, got[i*kn.n+r]), "%s bits %d group %d x%d %s at (%d, %d): %v, want %v",
									kn.k.Name, bits, group, groups, dt, i, r, got[i*kn.n+r], want)
							}
						}
					}
				}
			}
		}
	}
}

// TestQuantSplitMatchesScalar: a qmv large enough to split its rows with a helper
// (which takes them, or not, as it happens) gives qMatrix.dot's values bit for bit.
func TestQuantSplitMatchesScalar(t *testing.T) {
	rng := rand.New(rand.NewSource(22))
	for _, bits := range []int{4, 8} {
		const m, n, cols = 2, 4101, 1024
		w, s, b := qsimdArgs(rng, n, cols, bits, 64, BFloat16)
		x := NewArg(Contiguous(Float32, m, cols))
		copy(F32(x.Data), simdRandRow(rng, m*cols, false))
		l := &Launch{Kernel: KQMV, NArgs: 5, Params: &QuantParams{M: m, N: n, K: cols, Bits: bits, Group: 64}}
		l.Args[0], l.Args[1], l.Args[2], l.Args[3] = x, w, s, b
		l.Args[4] = NewArg(Contiguous(Float32, m, n))
		h := &Helper{}
		l.Helper = h
		done := make(chan struct{})
		go h.Serve(done)
		Run(l)
		close(done)
		qm := qBind("test", &w, &s, &b, n, cols, bits, 64)
		require.GreaterOrEqual(t, n*qm.rowBytes, qSplitBytes, "the product splits")
		xs, got := F32(x.Data), F32(l.Args[4].Data)
		sums := make([]float32, qm.groups)
		for i := 0; i < m; i++ {
			qm.groupSums(xs[i*cols:], sums)
			for r := 0; r < n; r++ {
				want := qm.dot(xs[i*cols:(i+1)*cols], sums, r)
				require.Truef(t, sameBits(want, got[i*n+r]), "bits %d (%d, %d): %v, want %v", bits, i, r, got[i*n+r], want)
			}
		}
	}
}

// TestQSwitchHelperMatchesOneCore: a qswitch_glu whose experts are large enough to
// share with a Helper (which takes them, or not, as it happens) gives the one-core
// loop's values bit for bit: the experts' outputs are summed in their order either way.
func TestQSwitchHelperMatchesOneCore(t *testing.T) {
	rng := rand.New(rand.NewSource(23))
	p := QSwitchGLUParams{T: 3, H: 1024, K: 6, E: 8, I: 256, GateBits: 4, UpBits: 4, DownBits: 8, GateGroup: 64, UpGroup: 64, DownGroup: 64}
	x := randArg(rng, Contiguous(Float32, p.T, p.H), -0.1, 0.1)
	gw, gs, gb := qSampleMatrix(rng, p.E*p.I, p.H, p.GateBits, p.GateGroup, BFloat16)
	uw, us, ub := qSampleMatrix(rng, p.E*p.I, p.H, p.UpBits, p.UpGroup, BFloat16)
	dw, ds, db := qSampleMatrix(rng, p.E*p.H, p.I, p.DownBits, p.DownGroup, BFloat16)
	ix := NewArg(Contiguous(Int32, p.T, p.K))
	qSampleIndex(rng, &ix, p.E)
	I32(ix.Data)[4] = int32(p.E) // an out-of-range expert is skipped on both paths
	sc := randArg(rng, Contiguous(Float32, p.T, p.K), 0, 1)
	run := func(h *Helper) []float32 {
		l := launch(KQSwitchGLU, &p, x, gw, gs, gb, uw, us, ub, dw, ds, db, ix, sc, NewArg(Contiguous(Float32, p.T, p.H)))
		l.Helper = h
		Run(l)
		return F32(l.Out().Data)
	}
	want := run(nil)
	h := &Helper{}
	done := make(chan struct{})
	go h.Serve(done)
	defer close(done)
	gate := qBind("test", &gw, &gs, &gb, p.E*p.I, p.H, p.GateBits, p.GateGroup)
	down := qBind("test", &dw, &ds, &db, p.E*p.H, p.I, p.DownBits, p.DownGroup)
	require.GreaterOrEqual(t, 2*gate.rowBytes*p.I+down.rowBytes*p.H, qswitchHelpBytes, "the experts are shared")
	for rep := 0; rep < 4; rep++ {
		got := run(h)
		for i := range want {
			require.Truef(t, sameBits(want[i], got[i]), "rep %d out %d: %v, want %v", rep, i, got[i], want[i])
		}
	}
}
