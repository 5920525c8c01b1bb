// Test kernels for msltest: elementwise work over a dispatchThreads grid.
#include <metal_stdlib>
using namespace metal;

struct Params {
  uint n;          // elements
  uint stride_a;   // element stride of a
  uint stride_out; // element stride of out
  float scale;     // out = a * scale + b
};

// out[i*stride_out] = a[i*stride_a] * scale + b[i] for i < n.
kernel void strided_add(
    const device float* a [[buffer(0)]],
    const device float* b [[buffer(1)]],
    device float* out [[buffer(2)]],
    constant Params& p [[buffer(3)]],
    uint gid [[thread_position_in_grid]]) {
  if (gid >= p.n) {
    return;
  }
  out[gid * p.stride_out] = a[gid * p.stride_a] * p.scale + b[gid];
}

// A 2-D grid over a rows x cols matrix stored with a row pitch, using
// float4 loads: m[r][c4] += bias[c4] * 0.5 + 1.
kernel void bias_rows4(
    device float4* m [[buffer(0)]],
    constant float4* bias [[buffer(1)]],
    constant uint& pitch4 [[buffer(2)]],
    uint2 pos [[thread_position_in_grid]]) {
  float4 v = m[pos.y * pitch4 + pos.x];
  v += bias[pos.x] * 0.5 + 1;
  m[pos.y * pitch4 + pos.x] = v;
}
