package checkpoint

import (
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"unsafe"
)

// A mapped file can change under the process: another program truncates or rewrites
// it, or a network file system drops it. Touching a page past the file's new end then
// raises SIGBUS, which would kill the process with a stack trace (exit 2, the code
// that means "crash reproduced" to decode). CatchFault turns such a fault into an
// error naming the file instead.
//
// Where the guard sits: every read of mapped bytes must happen inside CatchFault, on
// the goroutine that called it (SetPanicOnFault is per goroutine). Inside this package
// that is Safetensors.Float32 and Int64, AppendBytes (the copies nn.CheckpointSource
// makes of split experts) and CheckFinite; outside it nn.Builder.Array and
// nn.LoadTensor (tensor.FromHost copies the mapping into the device buffer there, in
// the calling goroutine, under CatchTensorFault): those errors name the tensor too.
// Bytes returns the mapping itself, so its callers guard their own reads: the loader
// entries nn/models.Load and LoadCheckpoint wrap the whole load, and cmd/quantize its
// whole run. A change
// that lets kernels read weights from the mapping in place (zero-copy CPU weights)
// moves those reads onto worker goroutines, which must then guard them too.

// ErrFileChanged is wrapped by the error CatchFault returns for a fault on a mapping.
var ErrFileChanged = errors.New("the file changed (shrank?) while mapped")

// mapped is the registry of live mappings, by address range, so that a fault address
// names its file. gone keeps the last mappings forgotten: a fault's panic runs the
// deferred Close of the checkpoint it read before CatchFault's recover looks the
// address up, so the range the fault hit may already be forgotten by then.
var mapped struct {
	sync.Mutex
	ranges []mappedRange
	gone   []mappedRange // newest last, at most goneKept
}

// goneKept bounds the forgotten mappings kept for lookup.
const goneKept = 64

type mappedRange struct {
	start, end uintptr
	file       string
}

// register records the mapping m of file and returns the function that forgets it.
func register(file string, m []byte) func() {
	if len(m) == 0 {
		return func() {}
	}
	r := mappedRange{uintptr(unsafe.Pointer(&m[0])), uintptr(unsafe.Pointer(&m[0])) + uintptr(len(m)), file}
	mapped.Lock()
	mapped.ranges = append(mapped.ranges, r)
	mapped.Unlock()
	return func() {
		mapped.Lock()
		defer mapped.Unlock()
		for i, x := range mapped.ranges {
			if x == r {
				mapped.ranges = append(mapped.ranges[:i], mapped.ranges[i+1:]...)
				if len(mapped.gone) == goneKept {
					mapped.gone = append(mapped.gone[:0], mapped.gone[1:]...)
				}
				mapped.gone = append(mapped.gone, r)
				return
			}
		}
	}
}

// lookup returns the mapping holding addr: a live one, else the newest forgotten one
// (an address may have been mapped again since; a live mapping wins).
func lookup(addr uintptr) (mappedRange, bool) {
	mapped.Lock()
	defer mapped.Unlock()
	for _, r := range mapped.ranges {
		if addr >= r.start && addr < r.end {
			return r, true
		}
	}
	for i := len(mapped.gone) - 1; i >= 0; i-- {
		if r := mapped.gone[i]; addr >= r.start && addr < r.end {
			return r, true
		}
	}
	return mappedRange{}, false
}

// CatchFault runs f on the calling goroutine and returns its error. A memory fault in
// f on a mapped checkpoint file is returned as a *CheckpointError naming the file and
// wrapping ErrFileChanged; any other panic, and a fault elsewhere, passes on unchanged.
func CatchFault(f func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		if fault, ok := r.(interface{ Addr() uintptr }); ok {
			if m, ok := lookup(fault.Addr()); ok {
				// Files are mapped from offset 0: the offset in the mapping is the file's.
				err = &CheckpointError{Path: m.file, Reason: fmt.Sprintf("reading byte %d", fault.Addr()-m.start), Err: ErrFileChanged}
				return
			}
		}
		panic(r)
	}()
	return f()
}

// CatchTensorFault is CatchFault for reads of one tensor, which its error names.
func CatchTensorFault(name string, f func() error) error {
	err := CatchFault(f)
	var ce *CheckpointError
	if errors.Is(err, ErrFileChanged) && errors.As(err, &ce) && ce.Tensor == "" {
		ce.Tensor = name
	}
	return err
}
