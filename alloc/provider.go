package alloc

import (
	"fmt"
	"sync"
	"unsafe"
)

// Provider makes and destroys raw device buffers; all accounting is the
// Allocator's, so every provider is counted by exactly the same rules.
type Provider interface {
	// Name identifies the device: "cpu", "metal".
	Name() string
	// Alloc creates one device buffer of exactly n > 0 bytes. An error makes
	// the Allocator return a *DeviceError.
	Alloc(n int) (Raw, error)
	// MaxBufferLength is the largest single buffer the device accepts.
	MaxBufferLength() int64
	// RecommendedWorkingSet is the device's working-set budget in bytes;
	// 0 means unknown, and the Allocator then derives it from RAM.
	RecommendedWorkingSet() int64
}

// Raw is one device buffer object.
type Raw interface {
	// Bytes is the host view of the whole buffer (len == allocated length).
	Bytes() []byte
	// Release destroys the device object.
	Release()
}

// CPUProvider returns the provider backed by Go memory. Its recommended
// working set and its largest buffer are both 0.75 x RAM (see the package
// documentation for the limits that follow from this).
func CPUProvider() Provider { return cpuProvider{} }

type cpuProvider struct{}

// Name is "cpu".
func (cpuProvider) Name() string { return "cpu" }

// Alloc backs the buffer with one []uint64 (so the data is 8-byte aligned, as kernels
// that reinterpret it as float32/float64/int64 require) whose last word holds the
// length: the Raw points at that word, so a buffer is a single pointer-free object,
// which the garbage collector marks without scanning (a dead chain pins hundreds of
// thousands of small buffers; each costs a collection as little as possible). The
// data starts the array, so it is as aligned as the runtime's allocation: a buffer of
// 32 KiB or more starts a page, as a Metal buffer does, and vector loads of its rows
// do not straddle cache lines.
func (cpuProvider) Alloc(n int) (Raw, error) {
	if n <= 0 {
		return nil, fmt.Errorf("alloc: cpu buffer of %d bytes: size must be positive", n)
	}
	w := (n + 7) / 8
	words := make([]uint64, w+1)
	words[w] = uint64(n)
	return (*cpuRaw)(unsafe.Pointer(&words[w])), nil
}

// MaxBufferLength is the CPU working set (0.75 x RAM).
func (cpuProvider) MaxBufferLength() int64 { return cpuWorkingSet() }

// RecommendedWorkingSet is 0.75 x RAM.
func (cpuProvider) RecommendedWorkingSet() int64 { return cpuWorkingSet() }

// cpuWorkingSet is 0.75 x RAM, the share MLX's Metal backend is typically
// granted on Apple silicon.
var cpuWorkingSet = sync.OnceValue(func() int64 {
	return int64(0.75 * float64(totalRAM()))
})

// cpuRaw is the length word of a CPU buffer; the data precedes it in the same array.
type cpuRaw struct{ n uint64 }

// Bytes is the buffer's Go memory (nil once released).
func (r *cpuRaw) Bytes() []byte {
	if r.n == 0 {
		return nil
	}
	start := unsafe.Add(unsafe.Pointer(r), -8*((int(r.n)+7)/8))
	return unsafe.Slice((*byte)(start), int(r.n))
}

// Release marks the buffer released; the Go GC reclaims the memory once the allocator
// drops its references.
func (r *cpuRaw) Release() { r.n = 0 }
