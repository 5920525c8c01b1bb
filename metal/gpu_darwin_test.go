//go:build darwin

package metal

import (
	"errors"
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
	if err == nil {
		err = g.Ready() // a family that does not compile refuses the device too
	}
	if errors.Is(err, ErrUnavailable) {
		skipOrFail(t, err) // a device NewGPU refuses (Accept)
	}
	require.NoError(t, err)
	return g
}

// onDevice copies l into buffers of the provider (see copyLaunch).
func onDevice(t *testing.T, p *bufferProvider, l *kernels.Launch) (kernels.Launch, []*buffer) {
	t.Helper()
	return copyLaunch(t, func(n int) (*buffer, error) {
		r, err := p.Alloc(n)
		if err != nil {
			return nil, err
		}
		return r.(*buffer), nil
	}, l)
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
					if err := kernels.CompareArgs(&l.Args[j], &batch[i].Args[j]); err != nil {
						t.Errorf("%s sample %d (%s, %+v) argument %d: %v", family, i, l.Kernel.Name, l.Params, j, err)
					}
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
