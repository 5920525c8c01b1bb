//go:build !darwin

package metal

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/ingotml/ingot/alloc"
	"github.com/ingotml/ingot/kernels"
)

// GPU is the Metal graph device. On this platform NewGPU cannot make one; the
// type and its methods exist so that callers compile everywhere. (The tests
// make one over an emulated backend, which runs Run's code unchanged.)
type GPU struct {
	mu   sync.Mutex // one batch at a time, as on darwin
	r    *runner
	prov alloc.Provider
	host *hostMaps // the emulated GPU's weights bound in place
}

// NewGPU makes a Metal graph device. On this platform it always fails with an
// error wrapping ErrUnavailable.
func NewGPU(opt GPUOptions) (*GPU, error) {
	if _, err := opt.withDefaults(); err != nil {
		return nil, err
	}
	_, err := Open()
	return nil, err
}

// Name is "metal".
func (g *GPU) Name() string { return "metal" }

// Provider makes the device's buffers; nil on this platform (but for the
// tests' emulated GPU).
func (g *GPU) Provider() alloc.Provider { return g.prov }

// Device is the Metal device the GPU runs on; nil on this platform.
func (g *GPU) Device() *Device { return nil }

// ResourceLimit is 0: there is no device here.
func (g *GPU) ResourceLimit() int { return 0 }

// MapHost binds b, within mapping, in place (see darwin's MapHost); on this platform
// only the tests' emulated GPU does.
func (g *GPU) MapHost(dt kernels.DType, b, mapping []byte) (done func(), ok bool) {
	if g == nil || g.host == nil {
		return nil, false
	}
	done, _, ok = g.host.adopt(dt, b, mapping)
	return done, ok
}

// Ready is nil once every family the GPU compiles in the background has compiled
// (see darwin's Ready); on this platform only the tests' emulated GPU has any.
func (g *GPU) Ready() error {
	if g == nil || g.r == nil {
		return fmt.Errorf("%w: this build is not for macOS (GOOS=%s)", ErrUnavailable, runtime.GOOS)
	}
	return readyError("the emulated GPU", g.r.cache.builds)
}

// Run fails on this platform with an error wrapping ErrUnavailable, except on
// the tests' emulated GPU, where it runs the batch as darwin's Run does.
func (g *GPU) Run(batch []kernels.Launch) error {
	if g == nil || g.r == nil {
		return fmt.Errorf("%w: this build is not for macOS (GOOS=%s)", ErrUnavailable, runtime.GOOS)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.r.runBatch(batch)
}

// Submit encodes and commits the batch without waiting (graph.Submitter): done is
// closed once it has completed, and wait returns what Run would have. On this
// platform only the tests' emulated GPU runs batches.
func (g *GPU) Submit(batch []kernels.Launch) (done <-chan struct{}, wait func() error) {
	if g == nil || g.r == nil {
		return closedChan(), func() error { return g.Run(batch) }
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return submitOn(g.r, &g.mu, batch, func(f func()) { f() })
}
