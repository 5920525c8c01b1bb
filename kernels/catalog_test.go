package kernels_test

import (
	"fmt"
	"math"
	"math/rand"
	"os"
	"path/filepath"
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
// kernels.Encoder by recording bindings and running each dispatch.
type harness struct {
	file  string
	entry string
	bufs  map[int][]byte
	err   error
}

func (h *harness) Entry(name string) { h.entry = name }

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
	h.err = msltest.Run(h.file, h.entry, d, bs)
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
		a := kernels.NewArg(l.Args[i].Layout)
		a.Data = a.Data[:0]
		words := make([]uint64, len(l.Args[i].Data)/8+2)
		b := unsafeBytes(words)[:len(l.Args[i].Data)]
		copy(b, l.Args[i].Data)
		c.Args[i].Data = b
	}
	return &c
}

// tolerance is the allowed relative difference between the twins: 1e-5 for float32;
// one unit in the last place for the half types, whose twins round a float (MSL) or a
// float64 (Go) result once, so the two can straddle a rounding boundary.
func tolerance(dt kernels.DType) float64 {
	switch dt {
	case kernels.Float16:
		return 1.0 / 1024
	case kernels.BFloat16:
		return 1.0 / 128
	}
	return 1e-5
}

// outputsAgree compares the output buffers element by element.
func outputsAgree(t *testing.T, name string, want, got *kernels.Arg) {
	t.Helper()
	dt := want.DType
	n := len(want.Data) / dt.Size()
	worst := 0.0
	for i := 0; i < n; i++ {
		x, y := kernels.Load(dt, want.Data, i), kernels.Load(dt, got.Data, i)
		if math.IsNaN(x) && math.IsNaN(y) {
			continue // outside the output: poisoned in both
		}
		if !dt.IsFloat() {
			require.Equal(t, x, y, "%s element %d", name, i)
			continue
		}
		d := math.Abs(x-y) / math.Max(1, math.Abs(x))
		worst = math.Max(worst, d)
		require.LessOrEqual(t, d, tolerance(dt), "%s element %d: go %v msl %v", name, i, x, y)
	}
	_ = worst
}

// TestMSLMatchesGoTwin runs every sample launch through both twins: the Go twin, and
// the unmodified .metal file compiled with g++ under the emulation header.
func TestMSLMatchesGoTwin(t *testing.T) {
	msltest.RequireCompiler(t)
	dir := t.TempDir()
	rng := rand.New(rand.NewSource(7))
	for fam, ls := range kernels.Samples(rng) {
		src, err := kernels.Source(fam)
		require.NoError(t, err)
		file := filepath.Join(dir, fam+".metal")
		require.NoError(t, os.WriteFile(file, []byte(src), 0o644))
		t.Run(fam, func(t *testing.T) {
			for i, l := range ls {
				name := fmt.Sprintf("%s#%d", l.Kernel.Name, i)
				g := clone(l)
				kernels.Run(l)
				h := &harness{file: file, bufs: map[int][]byte{}}
				g.Kernel.Encode(g, h)
				require.NoError(t, h.err, name)
				outputsAgree(t, name, l.Out(), g.Out())
			}
		})
	}
}
