// Package msltest runs the project's unmodified .metal kernels on the CPU,
// so that tests on Linux can compare them with their Go twins.
//
// It is test-only infrastructure. Run compiles a .metal file with g++
// (C++17) against mslemu.h, a header that emulates the part of the Metal
// Shading Language the kernels use, and runs one kernel over byte buffers:
//
//	bufs := []msltest.Buffer{{Index: 0, Data: msltest.Bytes(x)}, {Index: 1, Data: out}}
//	err := msltest.Run("kernels/add.metal", "add", msltest.Dispatch{
//		Threads: [3]int{n, 1, 1}, Group: [3]int{256, 1, 1}}, bufs)
//
// Tests call RequireCompiler first: it skips without g++, except in CI.
//
// # What a kernel file may use
//
// Entry points are plain functions at file scope declared `kernel void
// NAME(...)` (or `[[kernel]] void`); templates may serve as helpers, but a
// template kernel is not an entry point. Every parameter carries one
// attribute: [[buffer(n)]] with an integer literal n on a pointer or
// reference (device T*, const device T*, constant T&, constant T*), or one of
// thread_position_in_grid, thread_position_in_threadgroup,
// threadgroup_position_in_grid, threads_per_threadgroup,
// dispatch_threads_per_threadgroup, threadgroups_per_grid, threads_per_grid
// (as a scalar, 2- or 3-vector), thread_index_in_threadgroup,
// thread_index_in_simdgroup, simdgroup_index_in_threadgroup,
// simdgroups_per_threadgroup, threads_per_simdgroup, thread_execution_width.
// [[threadgroup(n)]] parameters are not supported: declare threadgroup
// arrays inside the kernel. Only <metal_*> headers can be included.
//
// The header provides the address-space qualifiers, scalar and vector types
// (float2..4, half, bfloat, int, uint, short, ushort, char, uchar, bool and
// their vectors, with .x .y .z .w, v[i], .xy and .zw; no other swizzles),
// metal:: math with precise:: and fast:: (all precise), select, clamp, dot,
// as_type, numeric_limits, atomics, threadgroup_barrier, simdgroup_barrier
// and the SIMD-group functions (sums, products, min/max, prefix sums,
// shuffles, broadcasts, ballots) over 32-lane simdgroups. half and bfloat
// round to nearest even on conversion and after every operation.
//
// Before compiling, msltest rewrites a few things on the same source lines,
// so g++ reports errors at the .metal file's own line numbers: each
// `threadgroup` variable becomes static storage shared by the threads of a
// group (and filled with 0xFF bytes at the start of each group, so reading
// what no thread wrote gives NaN), and floating literals without a suffix
// become float (MSL has no double; 1.5h becomes half(1.5f)).
//
// # How it runs
//
// Each thread of a threadgroup is a cooperative fiber (ucontext); fibers run
// round robin and switch only at barriers and SIMD-group functions, where
// the threads of a group, or the lanes of a simdgroup, really meet. Threads
// are split into simdgroups by thread_index_in_threadgroup. With
// Dispatch.Threads the edge threadgroups are partial, as with Metal's
// dispatchThreads: threads outside the grid do not exist, threads_per_threadgroup
// gives the partial size, and threads are numbered within it. Threadgroups
// run one after another, so results are deterministic; simd_sum and the
// other reductions add lanes pairwise in lane order.
//
// Buffers are placed against an inaccessible page, so reading or writing
// past the end of a buffer stops the kernel with a RunError naming the
// buffer, the offset and the thread; constant and const buffers are mapped
// read-only. g++'s diagnostics come back as a *CompileError.
//
// One executable per .metal file serves all its kernels, and stays running:
// a Session sends it one dispatch after another over a pipe. Buffers travel
// inline or, as Shared buffers, stay in files that Go and the program both
// map, so a long run (a model decoding through metal.GPU.Run) copies nothing.
// Dispatch.Order runs the threads of a group between barriers forward,
// reversed or shuffled, or one SIMD group at a time until it waits at a
// threadgroup barrier (forward or reversed: a write after a read across a
// missing barrier shows only there); a kernel whose result depends on it has
// a race.
// A bool loaded from memory keeps only the byte's low bit, as a GPU may.
//
// Executables are cached by content hash in a private per-user directory
// under os.TempDir (created 0700; refused if another user owns it, others
// may write to it, or it is a link), so a second process reuses them; each
// executable's SHA-256 is recorded beside it and checked before it runs. A
// compile takes a few seconds.
//
// Lint checks MSL with clang as far as Linux allows (address spaces, double),
// and RecordLayouts gives clang's layout of its structs, which the host's
// setBytes packers must match.
//
// # What it does not check
//
// It checks a kernel's arithmetic and indexing, not whether Apple's compiler
// accepts the file: g++ is more lenient in places (implicit conversions,
// the metal:: functions also provided here, such as log1p, that Apple's
// library may lack) and stricter in others (no swizzles beyond .xy/.zw).
// Math functions are the C library's, so compare exp, log or tanh results
// with a tolerance. Data races between threads are not detected, since
// fibers never run at the same time.
package msltest
