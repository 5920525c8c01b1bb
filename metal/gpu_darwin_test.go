//go:build darwin

package metal

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/kernels"
)

// gpuOrSkip makes a GPU, skipping the test on a Mac without a Metal device.
func gpuOrSkip(t *testing.T, opt GPUOptions) *GPU {
	t.Helper()
	openOrSkip(t)
	g, err := NewGPU(opt)
	require.NoError(t, err)
	return g
}

// onDevice copies l into buffers from the provider: a launch the GPU can run on
// the same inputs. Arguments sharing a buffer still share one.
func onDevice(t *testing.T, p *bufferProvider, l *kernels.Launch) (kernels.Launch, []*buffer) {
	t.Helper()
	c := *l
	made := map[*byte][]byte{}
	var bufs []*buffer
	for j := 0; j < c.NArgs; j++ {
		d := l.Args[j].Data
		if len(d) == 0 {
			continue
		}
		if m, ok := made[&d[0]]; ok {
			c.Args[j].Data = m
			continue
		}
		r, err := p.Alloc(len(d))
		require.NoError(t, err)
		b := r.(*buffer)
		copy(b.Bytes(), d)
		made[&d[0]] = b.Bytes()
		bufs = append(bufs, b)
		c.Args[j].Data = b.Bytes()
	}
	return c, bufs
}

// tolerance is the largest error allowed, relative to the largest magnitude
// of the Go twin's result: 1e-5 for float32, about one unit in the last
// place for the 16-bit floats.
var tolerance = map[kernels.DType]float64{kernels.Float32: 1e-5, kernels.Float16: 0x1p-10, kernels.BFloat16: 0x1p-7}

// compareArg checks the GPU's bytes of one argument against the Go twin's:
// integers and bools exactly, NaN and infinities in the same places, other
// floats within tolerance. Inputs are compared too: a twin must not write them.
func compareArg(t *testing.T, what string, want, got *kernels.Arg) {
	t.Helper()
	dt := want.DType
	n := len(want.Data) / dt.Size()
	var worst, scale float64
	for k := 0; k < n; k++ {
		w, g := kernels.Load(dt, want.Data, k), kernels.Load(dt, got.Data, k)
		if w == g || (math.IsNaN(w) && math.IsNaN(g)) {
			scale = math.Max(scale, finiteAbs(w))
			continue
		}
		if !dt.IsFloat() || math.IsNaN(w) || math.IsNaN(g) || math.IsInf(w, 0) || math.IsInf(g, 0) {
			t.Errorf("%s: element %d is %v on the GPU, %v from the Go twin", what, k, g, w)
			return
		}
		scale = math.Max(scale, math.Abs(w))
		worst = math.Max(worst, math.Abs(w-g))
	}
	if worst > tolerance[dt]*scale {
		t.Errorf("%s: max error %g relative to max magnitude %g is %g, above %g", what, worst, scale, worst/scale, tolerance[dt])
	}
}

func finiteAbs(v float64) float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0
	}
	return math.Abs(v)
}

// TestSamplesMatchGoTwins runs every registered sample launch on the GPU, one
// batch per family (several command buffers each), and compares every
// argument with what the Go twin leaves.
func TestSamplesMatchGoTwins(t *testing.T) {
	g := gpuOrSkip(t, GPUOptions{CommitEvery: 4})
	p := g.dev.provider
	buffers0, _ := p.counts()
	samples := kernels.Samples(rand.New(rand.NewSource(5)))
	require.NotEmpty(t, samples)
	families := make([]string, 0, len(samples))
	for f := range samples {
		families = append(families, f)
	}
	sort.Strings(families)
	for _, family := range families {
		t.Run(family, func(t *testing.T) {
			var batch []kernels.Launch
			var bufs []*buffer
			defer func() {
				for _, b := range bufs {
					b.Release()
				}
			}()
			var host []*kernels.Launch
			for _, l := range samples[family] {
				if l.Kernel.Encode == nil {
					t.Errorf("kernel %s has samples but no Metal twin", l.Kernel.Name)
					continue
				}
				c, bs := onDevice(t, p, l)
				batch = append(batch, c)
				bufs = append(bufs, bs...)
				host = append(host, l)
			}
			require.NoError(t, g.Run(batch))
			for i, l := range host {
				kernels.Run(l)
				for j := 0; j < l.NArgs; j++ {
					what := fmt.Sprintf("%s sample %d (%s, %+v) argument %d", family, i, l.Kernel.Name, l.Params, j)
					compareArg(t, what, &l.Args[j], &batch[i].Args[j])
				}
			}
			t.Logf("%d launches", len(batch))
		})
	}
	buffers, _ := p.counts()
	assert.Equal(t, buffers0, buffers, "live MTLBuffers after releasing every sample buffer")
}

func TestRunRejectsWhatMetalCannotDo(t *testing.T) {
	g := gpuOrSkip(t, GPUOptions{})
	host := kernels.Launch{Kernel: kernels.KArange, Params: &kernels.ArangeParams{Start: 0, Step: 1}, NArgs: 1}
	host.Args[0] = kernels.NewArg(kernels.Contiguous(kernels.Float32, 8))
	err := g.Run([]kernels.Launch{host})
	require.EqualError(t, err, "metal: kernel arange: buffer(0): the argument's data is not a live Metal buffer of this GPU")

	l, bufs := onDevice(t, g.dev.provider, &host)
	defer bufs[0].Release()
	l.Kernel = &kernels.Kernel{Name: "no_twin", Family: "arange", CPU: func(*kernels.Launch) {}}
	err = g.Run([]kernels.Launch{l})
	require.True(t, errors.Is(err, ErrNoEncode), "got %v", err)

	// The device still works after the failures.
	l.Kernel = kernels.KArange
	require.NoError(t, g.Run([]kernels.Launch{l}))
	assert.Equal(t, []float32{0, 1, 2, 3, 4, 5, 6, 7}, kernels.F32(l.Args[0].Data)[:8])
}

func TestNewGPUOptions(t *testing.T) {
	openOrSkip(t)
	_, err := NewGPU(GPUOptions{CommitEvery: -2})
	require.EqualError(t, err, "metal: GPUOptions.CommitEvery is -2; want 0 (for 50) or more")
	g := gpuOrSkip(t, GPUOptions{})
	assert.Equal(t, 50, g.r.commitEvery)
	assert.Equal(t, "metal", g.Name())
	assert.Same(t, g.dev.provider, g.Provider())
}

func TestProviderLookup(t *testing.T) {
	d := openOrSkip(t)
	p := d.provider
	var bufs []*buffer
	for _, n := range []int{16, 300, 70000} { // from a heap and from the device
		r, err := p.Alloc(n)
		require.NoError(t, err)
		bufs = append(bufs, r.(*buffer))
	}
	for _, b := range bufs {
		got, ok := p.lookup(&b.Bytes()[0])
		require.True(t, ok)
		require.Same(t, b, got)
		_, ok = p.lookup(&b.Bytes()[1])
		require.False(t, ok, "only a buffer's first byte finds it")
	}
	for _, b := range bufs {
		base := &b.Bytes()[0]
		b.Release()
		_, ok := p.lookup(base)
		require.False(t, ok, "a released buffer is not found")
	}
}
