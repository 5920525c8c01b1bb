package graph

import (
	"errors"
	"fmt"
	"runtime/debug"
	"slices"

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

// Submitter is implemented by a device whose batches run asynchronously (Metal): the
// executor submits the next batch while the device still runs the last, so the device
// does not idle while a batch is encoded. Batches complete in submission order.
type Submitter interface {
	// Submit encodes and commits batch and returns without waiting for it: done is
	// closed once it has completed, and wait blocks until then and returns what Run
	// would have returned. The executor calls wait once per batch, in submission
	// order, before it reuses or frees anything the batch uses.
	Submit(batch []kernels.Launch) (done <-chan struct{}, wait func() error)
}

// HostMapper is implemented by a device that binds host memory in place when it lies in
// a mapped file it can wrap (Metal: one no-copy buffer over the file's page-aligned
// mapping, each tensor bound at its offset). FromMapped asks it before it copies.
type HostMapper interface {
	// MapHost reports whether the device binds b, an array of dtype dt within mapping,
	// in place;
	// when it does, done ends that use (called when the array's buffer is freed, before
	// the mapping's own release).
	MapHost(dt kernels.DType, b, mapping []byte) (done func(), ok bool)
}

// FusedChooser is implemented by a device that chooses, by size, between a fused block
// kernel (kernels.KMoEBlock, KMLPBlock, KGDNBlock for the GDN pair) and the unfused
// kernels it replaces. Each device makes that choice in its TakesFused method, and
// nowhere else: the tensor layer and the models ask through TakesFused below.
type FusedChooser interface {
	// TakesFused reports whether the device runs fused block k with params p (the
	// kernel's parameter struct, a pointer; its row count is ignored). It never
	// takes sizes outside kernels.FusedBlockFits.
	TakesFused(k *kernels.Kernel, p any) bool
}

// TakesFused reports whether dev takes fused block k with params p: the device's own
// choice when it is a FusedChooser, else the CPU's.
func TakesFused(dev Device, k *kernels.Kernel, p any) bool {
	if c, ok := dev.(FusedChooser); ok {
		return c.TakesFused(k, p) && kernels.FusedBlockFits(k, p)
	}
	return theCPU.TakesFused(k, p)
}

type cpuDevice struct{ p alloc.Provider }

var theCPU = &cpuDevice{p: alloc.CPUProvider()}

// CPU returns the CPU device: Go twins on Go memory.
func CPU() Device { return theCPU }

// Name is "cpu".
func (d *cpuDevice) Name() string { return "cpu" }

// Provider makes Go-memory buffers.
func (d *cpuDevice) Provider() alloc.Provider { return d.p }

// TakesFused is the CPU's choice of fused blocks: every size the twins take (the Metal
// twin's limits), the choice made before the GPU had one of its own. Whether the
// unfused kernels would be faster on the CPU at some of these sizes is not measured.
func (d *cpuDevice) TakesFused(k *kernels.Kernel, p any) bool { return kernels.FusedBlockFits(k, p) }

// Run executes the batch in order; a kernel panic (a bug in a twin) becomes an error,
// and so does a memory fault: a weight used in place from its mapped file faults
// (SIGBUS) if the file shrinks underneath, and must fail the evaluation, not kill the
// process.
func (d *cpuDevice) Run(batch []kernels.Launch) (err error) {
	i := 0
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		r := recover()
		switch e, isErr := r.(error); {
		case r == nil:
		case isFault(r):
			err = fmt.Errorf("graph: cpu kernel %s: %w (%v)", batch[i].Kernel.Name, ErrMemoryFault, r)
		case isErr: // keeps a *kernels.LaunchError reachable by errors.As
			err = fmt.Errorf("graph: cpu kernel %s failed: %w", batch[i].Kernel.Name, e)
		default:
			err = fmt.Errorf("graph: cpu kernel %s failed: %v", batch[i].Kernel.Name, r)
		}
	}()
	// Launches already run with an earlier one (kernels.PairAhead), in order: a pair
	// runs its second launch ahead of the few between, which do not touch it.
	var paired []int
	for i = range batch {
		if len(paired) > 0 && paired[0] == i {
			paired = paired[1:]
			continue
		}
		if batch[i].Helper != nil {
			if j := kernels.PairAhead(batch, i); j > 0 && !slices.Contains(paired, j) {
				kernels.RunPair(&batch[i], &batch[j])
				paired = append(paired, j)
				slices.Sort(paired)
				continue
			}
		}
		batch[i].Kernel.CPU(&batch[i])
	}
	return nil
}

// ErrMemoryFault is wrapped by the error of a kernel that faulted reading memory: on
// the CPU device, a weight mapped in place from a file that was truncated or removed
// while in use.
var ErrMemoryFault = errors.New("memory fault reading a buffer (was a weight file changed or truncated while in use?)")

// isFault reports whether a recovered value is a memory fault on a real address
// (SetPanicOnFault's panic carries it); a nil dereference, a bug, is not one.
func isFault(r any) bool {
	a, ok := r.(interface{ Addr() uintptr })
	return ok && a.Addr() >= 1<<16
}
