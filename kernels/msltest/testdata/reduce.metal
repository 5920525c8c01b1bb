// Test kernels for msltest: SIMD-group functions and threadgroup memory.
#include <metal_stdlib>
using namespace metal;

// One simdgroup per row: lane j sums columns j, j+32, ...; simd_sum finishes.
// Grid (32, rows), threadgroup (32, 4).
kernel void row_sum(
    const device float* x [[buffer(0)]],
    device float* sums [[buffer(1)]],
    device float* maxes [[buffer(2)]],
    constant uint& cols [[buffer(3)]],
    uint2 pos [[thread_position_in_grid]],
    uint lane [[thread_index_in_simdgroup]]) {
  const device float* row = x + pos.y * cols;
  float s = 0.0;
  float m = -INFINITY;
  for (uint c = lane; c < cols; c += 32) {
    s += row[c];
    m = max(m, row[c]);
  }
  s = simd_sum(s);
  m = simd_max(m);
  if (lane == 0) {
    sums[pos.y] = s;
    maxes[pos.y] = m;
  }
}

// A tree reduction through threadgroup memory: 64 threads (two simdgroups)
// per group, one partial sum per group, barriers between the levels.
kernel void tree_sum(
    const device float* x [[buffer(0)]],
    device float* partial [[buffer(1)]],
    uint tid [[thread_index_in_threadgroup]],
    uint group [[threadgroup_position_in_grid]],
    uint gid [[thread_position_in_grid]]) {
  threadgroup float buf[64];
  threadgroup float* half_buf = buf + 32;  // a pointer into threadgroup memory
  buf[tid] = x[gid];
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (tid < 32) {
    buf[tid] += half_buf[tid];
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  for (uint s = 16; s > 0; s /= 2) {
    if (tid < s) {
      buf[tid] += buf[tid + s];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
  }
  if (tid == 0) {
    partial[group] = buf[0];
  }
}

// Per simdgroup: simd_sum into threadgroup memory, barrier, then simdgroup 0
// combines. Works for any number of simdgroups up to 32.
kernel void simd_tree_sum(
    const device float* x [[buffer(0)]],
    device float* partial [[buffer(1)]],
    uint gid [[thread_position_in_grid]],
    uint group [[threadgroup_position_in_grid]],
    uint lane [[thread_index_in_simdgroup]],
    uint sg [[simdgroup_index_in_threadgroup]],
    uint nsg [[simdgroups_per_threadgroup]]) {
  threadgroup float sg_sums[32];
  float s = simd_sum(x[gid]);
  if (lane == 0) {
    sg_sums[sg] = s;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  if (sg == 0) {
    float t = lane < nsg ? sg_sums[lane] : 0.0f;
    t = simd_sum(t);
    if (lane == 0) {
      partial[group] = t;
    }
  }
}

// Raw shuffles: each lane records what simd_shuffle_down(x, delta) and
// simd_shuffle_xor(x, 1) gave it, plus a shuffle-down reduction.
kernel void shuffles(
    const device float* x [[buffer(0)]],
    device float* down [[buffer(1)]],
    device float* xor1 [[buffer(2)]],
    device float* red [[buffer(3)]],
    device uint* prefix [[buffer(4)]],
    constant ushort& delta [[buffer(5)]],
    uint gid [[thread_position_in_grid]],
    uint lane [[thread_index_in_simdgroup]],
    uint sg [[simdgroup_index_in_threadgroup]],
    uint group [[threadgroup_position_in_grid]],
    uint nsg [[simdgroups_per_threadgroup]]) {
  float v = x[gid];
  down[gid] = simd_shuffle_down(v, delta);
  xor1[gid] = simd_shuffle_xor(v, 1);
  float r = v;
  for (ushort off = 16; off > 0; off /= 2) {
    r += simd_shuffle_down(r, off);
  }
  if (lane == 0) {
    red[group * nsg + sg] = r;
  }
  prefix[gid] = simd_prefix_exclusive_sum(uint(lane + 1));
}

// Reads threadgroup memory that no thread wrote: msltest fills it with 0xFF
// bytes, so the result is a NaN (on a GPU it would be garbage).
kernel void read_unwritten(
    device float* out [[buffer(0)]],
    uint tid [[thread_index_in_threadgroup]]) {
  threadgroup float scratch[8];
  if (tid == 0) {
    scratch[0] = 1.0f;
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  out[tid] = scratch[tid];
}
