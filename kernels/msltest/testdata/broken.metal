// Test kernels for msltest with planted bugs; the tests expect them to fail.
#include <metal_stdlib>
using namespace metal;

// Off by one: reads a[gid + 1], past the end for the last thread.
kernel void add_past_end(
    const device float* a [[buffer(0)]],
    device float* out [[buffer(1)]],
    uint gid [[thread_position_in_grid]]) {
  out[gid] = a[gid + 1] * 2.0f;
}

// Wrong index that stays in bounds: pairs of elements swapped.
kernel void add_swapped(
    const device float* a [[buffer(0)]],
    device float* out [[buffer(1)]],
    uint gid [[thread_position_in_grid]]) {
  out[gid] = a[gid ^ 1] * 2.0f;
}

// Writes into a constant buffer, which Metal forbids and msltest maps
// read-only.
kernel void write_constant(
    constant float* a [[buffer(0)]],
    uint gid [[thread_position_in_grid]]) {
  const_cast<device float*>(a)[gid] = 0.0f;
}

// Needs 36000 bytes of threadgroup memory; Metal allows 32 KiB.
kernel void too_much_threadgroup_memory(
    device float* out [[buffer(0)]],
    uint tid [[thread_index_in_threadgroup]]) {
  threadgroup float big[9000];
  big[tid] = 1.0f;
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[tid] = big[tid];
}

// A 1 MiB local array does not fit a thread's stack.
kernel void stack_hog(
    device float* out [[buffer(0)]],
    uint tid [[thread_position_in_grid]]) {
  float local[262144];
  for (uint i = 0; i < 262144; i += 4096) {
    local[i] = out[tid] + float(i);
  }
  out[tid] = local[tid * 4096];
}
