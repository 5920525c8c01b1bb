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
// NewGPU makes the graph device: a *GPU has graph.Device's methods (this
// package sits below graph and cannot name the interface). Its Run encodes
// each launch's MSL twin (the kernel's Encode) into a serial compute pass,
// commits a command buffer after GPUOptions.CommitEvery dispatches or
// GPUOptions.CommitBytes bytes of bound arguments (50 and 50 MB by default, as
// MLX on Max and Ultra chips) and at the end of the batch, and waits for all of
// them; a fence orders the passes, since the buffers are untracked, and within a
// pass a dispatch that binds a buffer an earlier one wrote (its output or
// scratch) gets a memory barrier first. Split kernels keep partial results in
// per-launch scratch (kernels.Encoder.Scratch): regions of one device buffer
// per batch. A kernel family's MSL is compiled when it is first needed, as
// MSL 3.1 with safe math (NewGPU requires macOS 14), and each pipeline is made
// once. Arguments are bound by the
// MTLBuffer whose contents they are (the provider indexes its live buffers by
// their first byte), at Offset times the element size. Whatever Metal would
// reject or crash on (host memory, an out-of-range binding, a threadgroup
// larger than the pipeline allows, a kernel without a Metal twin, MSL that
// does not compile) is returned as a *KernelError naming the kernel. Bad data
// that a twin meets while running (an index out of range) comes back through
// the batch's device error word (kernels/errword.go), which Run binds to the
// launches that ask for it and reads after the wait: Run then returns the
// *kernels.LaunchError the CPU device would have. Submit is Run without the wait
// (graph.Submitter): the graph encodes the next batch while the GPU runs this one,
// and each batch in flight has its own error word and scratch.
//
// All Metal code is built only for darwin. Elsewhere Available reports false,
// Open and NewGPU return an error wrapping ErrUnavailable, and the Device and
// GPU types keep the same methods so that callers compile on every platform.
// The bookkeeping of Run (caching, cadence, checks, errors) is platform
// independent and tested everywhere against a recording backend, and against
// an executing one (emu_test.go) that runs every dispatch on the MSL emulator of
// kernels/msltest: the golden models and the leak repro go through Run on it.
package metal
