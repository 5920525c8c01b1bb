package kernels

import (
	"fmt"
	"sort"
	"sync"
)

// MaxDims is the largest rank an array may have.
const MaxDims = 8

// MaxArgs is the largest number of buffers one kernel launch binds.
const MaxArgs = 16

// Layout says how an array's elements sit in its buffer: shape, strides (in elements),
// the offset of element 0 (in elements) and the dtype.
type Layout struct {
	NDim    int
	Shape   [MaxDims]int
	Strides [MaxDims]int
	Offset  int
	DType   DType
}

// Contiguous returns the row-major layout of shape.
func Contiguous(dt DType, shape ...int) Layout {
	if len(shape) > MaxDims {
		panic(fmt.Sprintf("kernels: rank %d exceeds %d", len(shape), MaxDims))
	}
	l := Layout{NDim: len(shape), DType: dt}
	st := 1
	for i := len(shape) - 1; i >= 0; i-- {
		l.Shape[i] = shape[i]
		l.Strides[i] = st
		st *= shape[i]
	}
	return l
}

// Dims returns the shape as a slice (a copy).
func (l *Layout) Dims() []int { return append([]int(nil), l.Shape[:l.NDim]...) }

// Size is the number of elements.
func (l *Layout) Size() int {
	n := 1
	for i := 0; i < l.NDim; i++ {
		n *= l.Shape[i]
	}
	return n
}

// IsContiguous reports whether the elements are dense in row-major order (dims of size 1
// may carry any stride).
func (l *Layout) IsContiguous() bool {
	st := 1
	for i := l.NDim - 1; i >= 0; i-- {
		if l.Shape[i] != 1 && l.Strides[i] != st {
			return false
		}
		st *= l.Shape[i]
	}
	return true
}

// Span is the number of elements from Offset to one past the last addressed element,
// the extent a buffer must have (0 for an empty array).
func (l *Layout) Span() int {
	hi := 0
	for i := 0; i < l.NDim; i++ {
		if l.Shape[i] == 0 {
			return 0
		}
		if l.Strides[i] > 0 {
			hi += (l.Shape[i] - 1) * l.Strides[i]
		}
	}
	return hi + 1
}

// SameShape reports whether a and b have equal shapes.
func SameShape(a, b *Layout) bool {
	if a.NDim != b.NDim {
		return false
	}
	for i := 0; i < a.NDim; i++ {
		if a.Shape[i] != b.Shape[i] {
			return false
		}
	}
	return true
}

// Arg is one buffer bound to a launch: the whole buffer's host bytes and how the array
// sits in it. On Metal the same Arg is bound as (MTLBuffer, Offset*itemsize).
type Arg struct {
	Data []byte
	Layout
}

// Launch is one kernel call: which kernel, its parameter struct, and its buffers (inputs
// first, outputs last, as each kernel documents).
type Launch struct {
	Kernel *Kernel
	Params any
	Args   [MaxArgs]Arg
	NArgs  int
	// Helper, when set, takes side work a Go twin offers (see Helper); nil runs it all
	// on the calling goroutine. Only the CPU device sets it.
	Helper *Helper
}

// In returns argument i.
func (l *Launch) In(i int) *Arg { return &l.Args[i] }

// Out returns the last argument, the output of single-output kernels.
func (l *Launch) Out() *Arg { return &l.Args[l.NArgs-1] }

// Encoder is what a Metal twin needs from a command encoder: the Metal device and the
// MSL emulation harness both implement it, so one Encode function per kernel drives both.
type Encoder interface {
	// Entry selects the MSL function (a kernel's entry may depend on dtype).
	Entry(name string)
	// SetArg binds launch argument a at [[buffer(index)]], offset by its layout's Offset.
	SetArg(index int, a *Arg)
	// SetBytes binds a small constant block (an MSL struct) at [[buffer(index)]].
	SetBytes(index int, b []byte)
	// DispatchThreads launches a grid of threads in groups of the given size.
	DispatchThreads(grid, group [3]int)
	// DispatchThreadgroups launches groups x group threads.
	DispatchThreadgroups(groups, group [3]int)
	// ErrorWord binds the batch's device error word (ErrorWordSize bytes, a
	// device atomic_uint*) at [[buffer(index)]] and the launch's position in its
	// batch (a constant uint) at [[buffer(index+1)]]; see errword.go.
	ErrorWord(index int)
	// Scratch binds n bytes of device memory of the launch's own at
	// [[buffer(index)]]: undefined at first, kept between the launch's dispatches
	// (a split pass writes partial results there and a later dispatch combines
	// them). A launch with several dispatches binds everything again before each.
	Scratch(index, n int)
}

// ThreadLimiter is implemented by encoders that know the selected function's pipeline
// limit on threads per threadgroup (Metal's maxTotalThreadsPerThreadgroup: at most 1024,
// lower for a kernel that uses many registers). Kernels that work at any width clamp to
// it (RowGroup); an encoder without it is taken to allow 1024.
type ThreadLimiter interface {
	MaxThreads() int
}

// Kernel is one entry of the catalog: a name shared by its two twins, the family (the
// .metal file stem), the Go twin that the CPU device runs, and the Metal twin's encoding.
type Kernel struct {
	Name   string
	Family string
	// CPU is the Go twin.
	CPU func(l *Launch)
	// Encode binds l's buffers and parameters and dispatches the MSL twin; nil means the
	// kernel has no Metal twin yet (the catalog test fails on that).
	Encode func(l *Launch, e Encoder)
	// Donates says the output may reuse the first input's buffer (elementwise kernels).
	Donates bool
	// Broadcasts says the inputs are handed over broadcast to the output's shape
	// (numpy rules: right-aligned, stride 0 on broadcast dims).
	Broadcasts bool
	// IndexAxis, for kernels whose Metal twin reports out-of-range indices through
	// the device error word, is the length of the axis l's indices address; it
	// completes the message DeviceError decodes.
	IndexAxis func(l *Launch) int
}

// BroadcastLayout returns in seen with shape out (numpy rules); in must be broadcastable.
func BroadcastLayout(in *Layout, out *Layout) Layout {
	r := Layout{NDim: out.NDim, DType: in.DType, Offset: in.Offset}
	lead := out.NDim - in.NDim
	for i := 0; i < out.NDim; i++ {
		r.Shape[i] = out.Shape[i]
		if j := i - lead; j >= 0 && in.Shape[j] == out.Shape[i] {
			r.Strides[i] = in.Strides[j]
		}
	}
	return r
}

var (
	regMu    sync.RWMutex
	registry = map[string]*Kernel{}
)

// Register adds k to the catalog and returns it; a duplicate name panics (a programming
// error caught by every test run).
func Register(k *Kernel) *Kernel {
	regMu.Lock()
	defer regMu.Unlock()
	if k.Name == "" || k.CPU == nil {
		panic("kernels: a kernel needs a name and a Go twin")
	}
	if _, dup := registry[k.Name]; dup {
		panic("kernels: duplicate kernel " + k.Name)
	}
	registry[k.Name] = k
	return k
}

// Lookup finds a kernel by name.
func Lookup(name string) (*Kernel, bool) {
	regMu.RLock()
	defer regMu.RUnlock()
	k, ok := registry[name]
	return k, ok
}

// All returns the catalog sorted by name.
func All() []*Kernel {
	regMu.RLock()
	defer regMu.RUnlock()
	out := make([]*Kernel, 0, len(registry))
	for _, k := range registry {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// LaunchError is the panic value of a Go twin that finds bad data in its inputs (an
// index out of range): the data is computed, so it cannot be checked when the graph
// is built. The CPU device turns the panic into the batch's error (wrapping this
// value), and every array the batch computes carries it.
type LaunchError struct {
	Kernel string
	Msg    string
}

// Error names the kernel and what was wrong.
func (e *LaunchError) Error() string { return "kernels: " + e.Kernel + ": " + e.Msg }

// launchFail stops l's Go twin with a *LaunchError.
func launchFail(l *Launch, format string, args ...any) {
	panic(&LaunchError{Kernel: l.Kernel.Name, Msg: fmt.Sprintf(format, args...)})
}

// Run calls the Go twin of l.Kernel.
func Run(l *Launch) { l.Kernel.CPU(l) }
