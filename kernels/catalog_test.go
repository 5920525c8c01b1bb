package kernels_test

import (
	"bytes"
	"fmt"
	"math/rand"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/kernels"
	"github.com/ingotml/ingot/kernels/msltest"
)

// TestCatalogComplete checks the catalog mechanically: every kernel has both twins,
// every family has its .metal file and sample launches, every sample kernel is known.
func TestCatalogComplete(t *testing.T) {
	samples := kernels.Samples(rand.New(rand.NewSource(1)))
	covered := map[string]bool{}
	for _, ls := range samples {
		for _, l := range ls {
			covered[l.Kernel.Name] = true
		}
	}
	for _, k := range kernels.All() {
		require.NotNil(t, k.CPU, "%s has no Go twin", k.Name)
		require.NotNil(t, k.Encode, "%s has no Metal twin (Encode)", k.Name)
		_, err := kernels.Source(k.Family)
		require.NoError(t, err, "%s: family %s", k.Name, k.Family)
		require.True(t, covered[k.Name], "%s has no sample launch, so its twins are never compared", k.Name)
	}
}

// harness runs a launch's Metal twin under the MSL emulation: it implements
// kernels.Encoder by recording bindings and running each dispatch in the given
// thread order.
type harness struct {
	sess    *msltest.Session
	order   msltest.ThreadOrder
	entry   string
	bufs    map[int][]byte
	word    []byte         // the error word, once Encode binds it
	scratch map[int][]byte // the launch's scratch by index, kept between its dispatches
	err     error
}

// ErrorWord binds a zeroed word and position 0 (each launch runs alone).
func (h *harness) ErrorWord(i int) {
	h.word = make([]byte, kernels.ErrorWordSize)
	h.bufs[i], h.bufs[i+1] = h.word, make([]byte, 4)
}

func (h *harness) Entry(name string) { h.entry = name }

// Scratch binds the launch's scratch at i: the same bytes at every dispatch of the
// launch, NaN-filled at first so that a read before a write shows.
func (h *harness) Scratch(i, n int) {
	if h.scratch == nil {
		h.scratch = map[int][]byte{}
	}
	if len(h.scratch[i]) < n {
		b := make([]byte, n)
		for j := range b {
			b[j] = 0xff
		}
		h.scratch[i] = b
	}
	h.bufs[i] = h.scratch[i][:n]
}

func (h *harness) SetArg(i int, a *kernels.Arg) {
	h.bufs[i] = a.Data[a.Offset*a.DType.Size():]
}

func (h *harness) SetBytes(i int, b []byte) { h.bufs[i] = append([]byte(nil), b...) }

func (h *harness) run(d msltest.Dispatch) {
	if h.err != nil {
		return
	}
	var bs []msltest.Buffer
	for i, b := range h.bufs {
		bs = append(bs, msltest.Buffer{Index: i, Data: b})
	}
	d.Order, d.Seed = h.order, 99
	h.err = h.sess.Run(h.entry, d, bs)
	h.bufs = map[int][]byte{}
}

func (h *harness) DispatchThreads(grid, group [3]int) {
	h.run(msltest.Dispatch{Threads: grid, Group: group})
}

func (h *harness) DispatchThreadgroups(groups, group [3]int) {
	h.run(msltest.Dispatch{Groups: groups, Group: group})
}

// clone deep-copies a launch's buffers.
func clone(l *kernels.Launch) *kernels.Launch {
	c := *l
	for i := 0; i < l.NArgs; i++ {
		words := make([]uint64, len(l.Args[i].Data)/8+2)
		b := unsafeBytes(words)[:len(l.Args[i].Data)]
		copy(b, l.Args[i].Data)
		c.Args[i].Data = b
	}
	return &c
}

// checkMSLTwins runs each launch through the Go twin and through the MSL twin in sess, once
// per thread order on copies carrying the second poison, and returns the first
// disagreement: with the Go twin (any argument) or between orders (bit for bit).
func checkMSLTwins(sess *msltest.Session, ls []*kernels.Launch) error {
	for i, l := range ls {
		name := fmt.Sprintf("%s#%d", l.Kernel.Name, i)
		copies := make([]*kernels.Launch, len(msltest.Orders))
		for k, order := range msltest.Orders {
			g := clone(l)
			kernels.SwapPoison(g)
			h := &harness{sess: sess, order: order, bufs: map[int][]byte{}}
			g.Kernel.Encode(g, h)
			if h.err != nil {
				return fmt.Errorf("%s (%v order): %w", name, order, h.err)
			}
			if h.word != nil && !bytes.Equal(h.word, make([]byte, kernels.ErrorWordSize)) {
				return fmt.Errorf("%s (%v order): an in-range sample set the error word to % x", name, order, h.word)
			}
			copies[k] = g
		}
		kernels.Run(l)
		for k, g := range copies {
			for j := 0; j < l.NArgs; j++ {
				if err := kernels.CompareArgs(&l.Args[j], &g.Args[j]); err != nil {
					return fmt.Errorf("%s argument %d (%v order): %w", name, j, msltest.Orders[k], err)
				}
				if k > 0 && !bytes.Equal(copies[0].Args[j].Data, g.Args[j].Data) {
					return fmt.Errorf("%s argument %d: the %v order gives other bytes than the %v order (a race)",
						name, j, msltest.Orders[k], msltest.Orders[0])
				}
			}
		}
	}
	return nil
}

var (
	familyMu       sync.Mutex
	familySessions = map[string]*msltest.Session{}
)

// runFamily runs an entry of a family's MSL, as Metal compiles it (kernels.Source), on
// the emulator; the tests' small encoders use it. One session per family serves them.
func runFamily(family, entry string, d msltest.Dispatch, bufs []msltest.Buffer) error {
	familyMu.Lock()
	s, ok := familySessions[family]
	if !ok {
		src, err := kernels.Source(family)
		if err != nil {
			familyMu.Unlock()
			return err
		}
		if s, err = msltest.OpenSource(family+".metal", src); err != nil {
			familyMu.Unlock()
			return err
		}
		familySessions[family] = s
	}
	familyMu.Unlock()
	return s.Run(entry, d, bufs)
}

// session starts the emulator on a family's MSL as Metal compiles it.
func session(t *testing.T, fam, src string) *msltest.Session {
	t.Helper()
	s, err := msltest.OpenSource(fam+".metal", src)
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}

// TestMSLMatchesGoTwin runs every sample launch through both twins: the Go twin, and
// the unmodified .metal file compiled with g++ under the emulation header, in every
// thread order of msltest.Orders.
func TestMSLMatchesGoTwin(t *testing.T) {
	msltest.RequireCompiler(t)
	rng := rand.New(rand.NewSource(7))
	for fam, ls := range kernels.Samples(rng) {
		src, err := kernels.Source(fam)
		require.NoError(t, err)
		sess := session(t, fam, src)
		t.Run(fam, func(t *testing.T) {
			require.NoError(t, checkMSLTwins(sess, ls))
		})
	}
}

// TestTwinCheckCatchesARemovedBarrier plants a race: the reduce family with its first
// threadgroup barrier removed must fail the check.
func TestTwinCheckCatchesARemovedBarrier(t *testing.T) {
	msltest.RequireCompiler(t)
	src, err := kernels.Source("reduce")
	require.NoError(t, err)
	const barrier = "threadgroup_barrier(mem_flags::mem_threadgroup);"
	require.Contains(t, src, barrier)
	sess := session(t, "reduce", strings.Replace(src, barrier, "", 1))
	ls := kernels.Samples(rand.New(rand.NewSource(7)))["reduce"]
	require.Error(t, checkMSLTwins(sess, ls))
}

// TestTwinCheckCatchesASkippedElement plants a kernel whose twins both leave the last
// element unwritten: with one poison for both copies that passed; now it must fail.
func TestTwinCheckCatchesASkippedElement(t *testing.T) {
	msltest.RequireCompiler(t)
	skip := func(l *kernels.Launch) *kernels.Launch {
		c := *l
		c.Args[0].Layout = kernels.Contiguous(kernels.Float32, l.Args[0].Size()-1)
		return &c
	}
	planted := &kernels.Kernel{Name: "arange_skips_last", Family: "arange",
		CPU:    func(l *kernels.Launch) { kernels.KArange.CPU(skip(l)) },
		Encode: func(l *kernels.Launch, e kernels.Encoder) { kernels.KArange.Encode(skip(l), e) },
	}
	l := &kernels.Launch{Kernel: planted, Params: &kernels.ArangeParams{Start: 1, Step: 2}, NArgs: 1}
	l.Args[0] = kernels.NewArg(kernels.Contiguous(kernels.Float32, 9))
	kernels.Poison(&l.Args[0])
	src, err := kernels.Source("arange")
	require.NoError(t, err)
	require.EqualError(t, checkMSLTwins(session(t, "arange", src), []*kernels.Launch{l}),
		"arange_skips_last#0 argument 0 (forward order): element 8 was written by neither twin")
}

// TestSimdSerialOrderCatchesAMissingBarrier plants a write-after-read race: logsumexp
// over rows of 3,000 (768 threads) with block_allreduce's second barrier removed, so a
// simdgroup may write its partial of the second reduction over the first's before the
// others read it. Running each SIMD group alone to the barrier, forward or reversed,
// exposes it; the round-robin orders run every lane to each SIMD call together and do
// not (which is why the serial orders exist).
func TestSimdSerialOrderCatchesAMissingBarrier(t *testing.T) {
	msltest.RequireCompiler(t)
	src, err := kernels.Source("reduce")
	require.NoError(t, err)
	const second = "    v = simd_allreduce<Op>(v);\n    threadgroup_barrier(mem_flags::mem_threadgroup);\n    return v;\n"
	require.Equal(t, 1, strings.Count(src, second))
	sess := session(t, "reduce", strings.Replace(src, second, "    v = simd_allreduce<Op>(v);\n    return v;\n", 1))
	rng := rand.New(rand.NewSource(5))
	l := &kernels.Launch{Kernel: kernels.ReduceKernel(kernels.RedLogSumExp), NArgs: 2}
	l.Args[0] = kernels.NewArg(kernels.Contiguous(kernels.Float32, 4, 3000))
	kernels.Fill(rng, &l.Args[0], -50, 50)
	l.Args[1] = kernels.NewArg(kernels.Contiguous(kernels.Float32, 4))
	kernels.Poison(&l.Args[1])
	want := clone(l)
	kernels.Run(want)
	for _, order := range msltest.Orders {
		g := clone(l)
		h := &harness{sess: sess, order: order, bufs: map[int][]byte{}}
		g.Kernel.Encode(g, h)
		require.NoError(t, h.err)
		err := kernels.CompareArgs(&want.Args[1], &g.Args[1])
		if order == msltest.OrderSimdSerial || order == msltest.OrderSimdSerialReverse {
			require.Error(t, err, "%v order", order)
		} else {
			require.NoError(t, err, "%v order", order)
		}
	}
}
