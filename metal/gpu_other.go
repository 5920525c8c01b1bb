//go:build !darwin

package metal

import (
	"fmt"
	"runtime"

	"github.com/ingotml/ingot/alloc"
	"github.com/ingotml/ingot/kernels"
)

// GPU is the Metal graph device. On this platform none can be made; the type
// and its methods exist so that callers compile everywhere.
type GPU struct{}

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

// Provider makes the device's buffers; nil on this platform.
func (g *GPU) Provider() alloc.Provider { return nil }

// Device is the Metal device the GPU runs on; nil on this platform.
func (g *GPU) Device() *Device { return nil }

// ResourceLimit is 0: there is no device here.
func (g *GPU) ResourceLimit() int { return 0 }

// Run fails on this platform with an error wrapping ErrUnavailable.
func (g *GPU) Run(batch []kernels.Launch) error {
	return fmt.Errorf("%w: this build is not for macOS (GOOS=%s)", ErrUnavailable, runtime.GOOS)
}
