//go:build !darwin

package metal

import (
	"fmt"
	"math/rand"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/kernels"
	"github.com/ingotml/ingot/kernels/msltest"
)

// onEmulator copies l into buffers of the provider (see copyLaunch).
func onEmulator(t *testing.T, p *emuProvider, l *kernels.Launch) (kernels.Launch, []*emuBuffer) {
	t.Helper()
	return copyLaunch(t, func(n int) (*emuBuffer, error) {
		r, err := p.Alloc(n)
		if err != nil {
			return nil, err
		}
		return r.(*emuBuffer), nil
	}, l)
}

// runSamples runs the sample launches of the given families (all when nil) through
// GPU.Run, one batch per family, and compares every argument with the Go twin's.
func runSamples(t *testing.T, g *GPU, b *emuBackend, families []string) {
	samples := kernels.Samples(rand.New(rand.NewSource(5)))
	if families == nil {
		for f := range samples {
			families = append(families, f)
		}
		sort.Strings(families)
	}
	live := b.prov.liveBuffers()
	for _, family := range families {
		t.Run(family, func(t *testing.T) {
			var batch []kernels.Launch
			var bufs []*emuBuffer
			defer func() {
				for _, b := range bufs {
					b.Release()
				}
			}()
			for _, l := range samples[family] {
				c, bs := onEmulator(t, b.prov, l)
				batch = append(batch, c)
				bufs = append(bufs, bs...)
			}
			require.NotEmpty(t, batch, "samples of %s", family)
			require.NoError(t, g.Run(batch))
			for i, l := range samples[family] {
				kernels.Run(l)
				for j := 0; j < l.NArgs; j++ {
					require.NoError(t, kernels.CompareArgs(&l.Args[j], &batch[i].Args[j]),
						fmt.Sprintf("%s sample %d (%s) argument %d", family, i, l.Kernel.Name, j))
				}
			}
		})
	}
	require.Equal(t, live, b.prov.liveBuffers(), "every sample buffer released")
}

// TestEmulatedSamplesMatchGoTwins runs every sample launch through GPU.Run on the
// executing backend, several command buffers per family.
func TestEmulatedSamplesMatchGoTwins(t *testing.T) {
	g, b := newEmulatedGPU(t, GPUOptions{CommitEvery: 4}, msltest.OrderShuffled)
	runSamples(t, g, b, nil)
	t.Logf("%d dispatches", b.ranDispatches())
}

// TestRowKernelsClampToPipelineLimit: a pipeline allowing fewer than 1024 threads per
// threadgroup (Metal lowers it for kernels using many registers) still runs the row
// kernels, which work at any multiple of 32, at its width, and the staged qmv, whose
// threadgroups then hold fewer slots.
func TestRowKernelsClampToPipelineLimit(t *testing.T) {
	g, b := newEmulatedGPU(t, GPUOptions{}, msltest.OrderForward)
	b.maxThr = 96 // clamps to 64
	runSamples(t, g, b, []string{"norm", "reduce", "softmax", "quant"})
}
