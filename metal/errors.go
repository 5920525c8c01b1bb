package metal

import (
	"errors"
	"fmt"
)

// ErrUnavailable is wrapped by Open's error when there is no Metal device:
// on a platform other than macOS, or a Mac without a usable GPU.
var ErrUnavailable = errors.New("metal: no Metal device")

// ErrNoEncode is wrapped by GPU.Run's error for a kernel that has no Metal
// twin yet (its Encode is nil), so a caller can tell it from a GPU failure.
var ErrNoEncode = errors.New("no Metal twin (Kernel.Encode is nil)")

// KernelError is a launch that could not be encoded: the kernel has no Metal
// twin, its family's MSL does not compile, or its Encode asked for something
// Metal cannot do (a buffer that is not a Metal buffer, a threadgroup larger
// than the pipeline allows, ...).
type KernelError struct {
	Kernel string // the kernel's catalog name
	Err    error
}

// Error names the kernel.
func (e *KernelError) Error() string { return fmt.Sprintf("metal: kernel %s: %v", e.Kernel, e.Err) }

// Unwrap returns the cause.
func (e *KernelError) Unwrap() error { return e.Err }

// CompileError is Metal rejecting a family's MSL (Entry is empty) or making
// no pipeline for one of its functions. It reaches callers inside a
// *KernelError naming the kernel that needed it.
type CompileError struct {
	Family string // the .metal file stem
	Entry  string // the MSL function; empty when the library failed
	Err    error  // Metal's message, with the compiler's diagnostics
}

// Error names the family and entry.
func (e *CompileError) Error() string {
	if e.Entry == "" {
		return fmt.Sprintf("compiling %s.metal: %v", e.Family, e.Err)
	}
	return fmt.Sprintf("pipeline for %s of %s.metal: %v", e.Entry, e.Family, e.Err)
}

// Unwrap returns the compiler's error.
func (e *CompileError) Unwrap() error { return e.Err }
