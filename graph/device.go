package graph

import (
	"fmt"

	"github.com/ingotml/ingot/alloc"
	"github.com/ingotml/ingot/kernels"
)

// Device runs kernel launches. The CPU device calls each kernel's Go twin; the Metal
// device encodes its MSL twin. Run is called on the graph's worker goroutine, one batch
// at a time, in submission order, and returns when the batch has completed.
type Device interface {
	Name() string
	Provider() alloc.Provider
	Run(batch []kernels.Launch) error
}

// ResourceLimiter is implemented by devices that know their buffer-object limit (Metal
// reads the iogpu.rsrc_limit sysctl). New uses it when neither Options nor the
// environment set a limit, as MLX does.
type ResourceLimiter interface {
	ResourceLimit() int
}

type cpuDevice struct{ p alloc.Provider }

var theCPU = &cpuDevice{p: alloc.CPUProvider()}

// CPU returns the CPU device: Go twins on Go memory.
func CPU() Device { return theCPU }

// Name is "cpu".
func (d *cpuDevice) Name() string { return "cpu" }

// Provider makes Go-memory buffers.
func (d *cpuDevice) Provider() alloc.Provider { return d.p }

// Run executes the batch in order; a kernel panic (a bug in a twin) becomes an error.
func (d *cpuDevice) Run(batch []kernels.Launch) (err error) {
	i := 0
	defer func() {
		if r := recover(); r != nil {
			if e, ok := r.(error); ok { // keeps a *kernels.LaunchError reachable by errors.As
				err = fmt.Errorf("graph: cpu kernel %s failed: %w", batch[i].Kernel.Name, e)
				return
			}
			err = fmt.Errorf("graph: cpu kernel %s failed: %v", batch[i].Kernel.Name, r)
		}
	}()
	for i = range batch {
		batch[i].Kernel.CPU(&batch[i])
	}
	return nil
}
