// Package metal is ingot's Apple GPU backend, written against the
// Objective-C bindings of github.com/progrium/macdriver.
//
// Open finds the system's default Metal device and reports the limits the
// allocator needs: the largest buffer, the recommended working set and the
// resource limit (the iogpu.rsrc_limit sysctl, or 499000 where macOS does not
// set it, as MLX assumes). Device.Provider makes the device's buffers for
// package alloc: shared-storage, untracked-hazard MTLBuffers, so the CPU
// reads and writes the same memory the GPU uses. Requests under 256 bytes are
// sub-allocated from 1 MiB MTLHeaps, as MLX does; each is still its own
// MTLBuffer object, and so still one object for the allocator's count.
//
// All Metal code is built only for darwin. Elsewhere Available reports false
// and Open returns an error wrapping ErrUnavailable, and the Device type keeps
// the same methods so that callers compile on every platform.
package metal
