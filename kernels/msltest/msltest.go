package msltest

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

// Dispatch describes one compute dispatch, as a Metal encoder would issue it.
type Dispatch struct {
	Threads [3]int // dispatchThreads: total grid in threads (if non-zero)
	Groups  [3]int // dispatchThreadgroups: number of threadgroups (if Threads is zero)
	Group   [3]int // threads per threadgroup
	// Order is the order in which the threads of a group run between barriers;
	// Seed drives OrderShuffled.
	Order ThreadOrder
	Seed  uint64
}

// ThreadOrder is the order in which the emulator resumes the threads of a
// threadgroup between barriers and SIMD-group functions. A GPU promises no
// order, so a kernel whose results differ between orders has a race.
type ThreadOrder uint32

const (
	OrderForward  ThreadOrder = iota // by thread_index_in_threadgroup
	OrderReverse                     // highest index first
	OrderShuffled                    // a fresh random permutation at every round
	// OrderSimdSerial runs one SIMD group at a time, by index, each alone until all
	// its lanes wait at a threadgroup barrier (or are done): a group finishes a phase
	// before the next starts it, which exposes a write-after-read across a missing
	// barrier that the round-robin orders above cannot.
	OrderSimdSerial
	OrderSimdSerialReverse // OrderSimdSerial, highest SIMD group first
)

// Orders lists every ThreadOrder, for tests that run a kernel in each.
var Orders = []ThreadOrder{OrderForward, OrderReverse, OrderShuffled, OrderSimdSerial, OrderSimdSerialReverse}

// String names the order.
func (o ThreadOrder) String() string {
	switch o {
	case OrderForward:
		return "forward"
	case OrderReverse:
		return "reverse"
	case OrderShuffled:
		return "shuffled"
	case OrderSimdSerial:
		return "simd-serial"
	case OrderSimdSerialReverse:
		return "simd-serial-reverse"
	}
	return fmt.Sprintf("ThreadOrder(%d)", uint32(o))
}

// Buffer is what the kernel parameter [[buffer(Index)]] points at: either
// Data, which Run overwrites with the bytes the kernel left there, or, when
// Shared is set, Offset bytes into a shared buffer that the kernel reads and
// writes in place (Data is then unused).
type Buffer struct {
	Index  int
	Data   []byte
	Shared *Shared
	Offset int
}

// ErrNoCompiler is wrapped by Available and Run when g++ cannot be used.
var ErrNoCompiler = errors.New("msltest: g++ is not available")

// ErrKernelNotFound is wrapped by Run when the file has no such entry point.
var ErrKernelNotFound = errors.New("msltest: kernel not found")

// CompileError is g++ rejecting a .metal file (or msltest's generated driver
// for it); Output is g++'s message, with positions in the .metal file.
type CompileError struct {
	File   string
	Output string
}

// Error gives the file and g++'s full message.
func (e *CompileError) Error() string {
	return fmt.Sprintf("msltest: compiling %s:\n%s", e.File, e.Output)
}

// RunError is a kernel program that failed while running, for example on an
// out-of-bounds buffer access, a stack overflow or a timeout. Output holds
// the program's report.
type RunError struct {
	File   string
	Kernel string
	Output string
	Err    error
}

// Error gives the kernel, how the program ended and its report.
func (e *RunError) Error() string {
	return fmt.Sprintf("msltest: running kernel %s of %s: %v: %s", e.Kernel, e.File, e.Err, e.Output)
}

// Unwrap returns how the program ended (an *exec.ExitError, or a timeout).
func (e *RunError) Unwrap() error { return e.Err }

// maxThreadsPerGroup is Metal's limit on threads in one threadgroup.
const maxThreadsPerGroup = 1024

// runTimeout bounds one kernel run, so that a kernel that never finishes
// fails its test instead of hanging it.
const runTimeout = 2 * time.Minute

// Available reports whether g++ is usable: nil if so, else why not (wrapping
// ErrNoCompiler).
func Available() error {
	_, err := compilerVersion()
	return err
}

// Run compiles the .metal file with g++ (once per content; executables are
// cached by content hash in a private per-user directory) and runs kernel
// name over the given buffers; each Buffer's Data is overwritten with the
// results. Every [[buffer(n)]] parameter of the kernel needs exactly one
// Buffer and every Buffer must match a parameter. The file's kernel program
// stays running for the next Run of the same file (see Session).
func Run(metalFile, name string, d Dispatch, bufs []Buffer) error {
	s, err := sessionFor(metalFile)
	if err != nil {
		return err
	}
	return s.Run(name, d, bufs)
}

// normalize checks a Dispatch and returns the driver's mode (0 for
// dispatchThreads, 1 for dispatchThreadgroups), grid and group sizes.
func (d Dispatch) normalize() (uint32, [3]uint32, [3]uint32, error) {
	var grid, group [3]uint32
	mode, what, sizes := uint32(0), "Threads", d.Threads
	if d.Threads == [3]int{} {
		if d.Groups == [3]int{} {
			return 0, grid, group, errors.New("msltest: Dispatch has neither Threads nor Groups")
		}
		mode, what, sizes = 1, "Groups", d.Groups
	}
	total := 1
	for i := range 3 {
		if sizes[i] < 1 {
			return 0, grid, group, fmt.Errorf("msltest: Dispatch.%s[%d] is %d; use 1 for an unused dimension", what, i, sizes[i])
		}
		if d.Group[i] < 1 {
			return 0, grid, group, fmt.Errorf("msltest: Dispatch.Group[%d] is %d; use 1 for an unused dimension", i, d.Group[i])
		}
		if d.Group[i] > maxThreadsPerGroup || sizes[i] > math.MaxUint32 || (mode == 1 && sizes[i]*d.Group[i] > math.MaxUint32) {
			return 0, grid, group, fmt.Errorf("msltest: Dispatch dimension %d is too large", i)
		}
		grid[i], group[i] = uint32(sizes[i]), uint32(d.Group[i])
		total *= d.Group[i]
	}
	if total > maxThreadsPerGroup {
		return 0, grid, group, fmt.Errorf("msltest: Dispatch.Group %v has %d threads; Metal allows at most %d", d.Group, total, maxThreadsPerGroup)
	}
	return mode, grid, group, nil
}

// checkBuffers matches the buffers with the kernel's parameters and returns
// each buffer's driver flags (bit 0: map read-only).
func checkBuffers(k *kernelSig, bufs []Buffer) ([]uint32, error) {
	flags := make([]uint32, len(bufs))
	have := map[int]bool{}
	for i, b := range bufs {
		if b.Shared != nil && (b.Offset < 0 || b.Offset > len(b.Shared.Bytes)) {
			return nil, fmt.Errorf("msltest: Buffer %d: offset %d is outside its %d-byte shared buffer", b.Index, b.Offset, len(b.Shared.Bytes))
		}
		if b.Index < 0 || b.Index > 30 {
			return nil, fmt.Errorf("msltest: Buffer index %d is not in 0..30", b.Index)
		}
		if have[b.Index] {
			return nil, fmt.Errorf("msltest: two buffers have Index %d", b.Index)
		}
		have[b.Index] = true
		p, ok := k.buffer(b.Index)
		if !ok {
			return nil, fmt.Errorf("msltest: kernel %s has no [[buffer(%d)]] parameter", k.name, b.Index)
		}
		if p.readOnly {
			flags[i] = 1
		}
		if b.Shared != nil {
			flags[i] |= 2
		}
	}
	for _, p := range k.params {
		if p.kind == paramBuffer && !have[p.index] {
			return nil, fmt.Errorf("msltest: kernel %s: no Buffer for [[buffer(%d)]] (parameter %s)", k.name, p.index, p.name)
		}
	}
	return flags, nil
}

// encodeRequest lays out one request of the driver's serve loop (little
// endian; see mslemu_driver.h): "MSLQ", version 2, name, mode, grid[3],
// group[3], order, seed, then per buffer its index and flags and either its
// bytes or where its shared file is.
func encodeRequest(name string, mode uint32, grid, group [3]uint32, d Dispatch, bufs []Buffer, flags []uint32) []byte {
	le := binary.LittleEndian
	b := []byte("MSLQ")
	b = le.AppendUint32(b, 2)
	b = le.AppendUint32(b, uint32(len(name)))
	b = append(b, name...)
	b = le.AppendUint32(b, mode)
	for _, v := range grid {
		b = le.AppendUint32(b, v)
	}
	for _, v := range group {
		b = le.AppendUint32(b, v)
	}
	b = le.AppendUint32(b, uint32(d.Order))
	b = le.AppendUint64(b, d.Seed)
	b = le.AppendUint32(b, uint32(len(bufs)))
	for i, buf := range bufs {
		b = le.AppendUint32(b, uint32(buf.Index))
		b = le.AppendUint32(b, flags[i])
		if sh := buf.Shared; sh != nil {
			b = le.AppendUint32(b, uint32(len(sh.path)))
			b = append(b, sh.path...)
			b = le.AppendUint64(b, uint64(len(sh.mapping)))
			b = le.AppendUint64(b, uint64(sh.dataOff))
			b = le.AppendUint64(b, uint64(len(sh.Bytes)))
			b = le.AppendUint64(b, uint64(buf.Offset))
			continue
		}
		b = le.AppendUint64(b, uint64(len(buf.Data)))
		b = append(b, buf.Data...)
	}
	return b
}

// decodeResponse copies the driver's inline buffers ("MSLA", count, then
// index, length and bytes each) back into bufs.
func decodeResponse(resp []byte, bufs []Buffer) error {
	le := binary.LittleEndian
	if len(resp) < 8 || string(resp[:4]) != "MSLA" {
		return errors.New("malformed response")
	}
	n := int(le.Uint32(resp[4:]))
	byIndex := map[int]*Buffer{}
	for i := range bufs {
		if bufs[i].Shared == nil {
			byIndex[bufs[i].Index] = &bufs[i]
		}
	}
	if n != len(byIndex) {
		return fmt.Errorf("response has %d buffers, want %d", n, len(byIndex))
	}
	rest := resp[8:]
	for range n {
		if len(rest) < 12 {
			return errors.New("truncated response")
		}
		idx, size := int(le.Uint32(rest)), le.Uint64(rest[4:])
		rest = rest[12:]
		b, ok := byIndex[idx]
		if !ok || size != uint64(len(b.Data)) || uint64(len(rest)) < size {
			return fmt.Errorf("response buffer %d does not match the request", idx)
		}
		copy(b.Data, rest[:size])
		rest = rest[size:]
	}
	return nil
}
