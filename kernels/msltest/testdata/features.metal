// Test kernels for msltest: the metal:: library surface kernels lean on.
#include <metal_stdlib>
#include <metal_atomic>
using namespace metal;

constexpr constant uint kMath = 32;

// out[i*kMath + j] is function j of x[i] (x > 0).
kernel void math_funcs(
    const device float* xs [[buffer(0)]],
    device float* out [[buffer(1)]],
    uint i [[thread_position_in_grid]]) {
  float x = xs[i];
  device float* o = out + i * kMath;
  o[0] = exp(x);           o[1] = exp2(x);          o[2] = log(x);          o[3] = log2(x);
  o[4] = log10(x);         o[5] = log1p(x);         o[6] = sqrt(x);         o[7] = rsqrt(x);
  o[8] = tanh(x - 2);      o[9] = sin(x);           o[10] = cos(x);         o[11] = pow(x, 1.5);
  o[12] = floor(x);        o[13] = ceil(x);         o[14] = round(x);       o[15] = abs(-x);
  o[16] = fabs(-x);        o[17] = fmax(x, 1.0);    o[18] = fmin(x, 1.0);   o[19] = max(x, 2.0f);
  o[20] = min(x, 2.0f);    o[21] = clamp(x, 0.5f, 2.0f);
  o[22] = select(0.0f, 1.0f, x > 1);
  o[23] = precise::exp(x); o[24] = fast::exp(x);    o[25] = metal::exp(x);
  o[26] = isnan(x / 0 * 0) ? 1 : 0;                 o[27] = isinf(x / 0) ? 1 : 0;
  o[28] = fract(x);        o[29] = sign(x - 1);     o[30] = trunc(-x);      o[31] = fma(x, x, 1);
}

// Vector arithmetic, conversions and bit casts; 16 outputs per thread.
kernel void vec_ops(
    const device float4* v [[buffer(0)]],
    const device int4* n [[buffer(1)]],
    device float* out [[buffer(2)]],
    device uint* bits [[buffer(3)]],
    uint i [[thread_position_in_grid]]) {
  float4 a = v[i];
  float4 b = float4(a.zw, a.xy) * 2 - 1;
  int4 m = n[i];
  device float* o = out + i * 16;
  o[0] = dot(a, b);
  o[1] = length(a.xy);
  float2 s = a.xy + b.zw;
  o[2] = s.x;
  o[3] = s.y;
  float4 c = select(a, b, a > b);
  o[4] = c.x + c.y * 10 + c.z * 100 + c.w * 1000;
  o[5] = all(a == a) && !any(a != a) ? 1 : 0;
  int4 r = (m % 7) + (m << 2) - (m & 3);
  float4 rf = float4(r);
  o[6] = rf.x; o[7] = rf.y; o[8] = rf.z; o[9] = rf.w;
  uint2 t = uint2(a.xy * 3.7);
  o[10] = float(t.x);
  o[11] = float(t.y);
  float3 p = float3(a.x, a.y, a.z);
  o[12] = p.z;
  o[13] = float(sizeof(float3));
  o[14] = max(a, 0.5f).x;
  o[15] = (-a).w;
  bits[i * 2] = as_type<uint>(a.x);
  bits[i * 2 + 1] = as_type<uint>(half2(half(a.y), half(1.0)));
}

// SIMD-group functions beyond simd_sum; 12 outputs per thread.
kernel void simd_misc(
    const device float* x [[buffer(0)]],
    device float* out [[buffer(1)]],
    uint gid [[thread_position_in_grid]],
    ushort lane [[thread_index_in_simdgroup]]) {
  float v = x[gid];
  device float* o = out + gid * 12;
  o[0] = simd_broadcast(v, 5);
  o[1] = simd_broadcast_first(v);
  o[2] = simd_min(v);
  o[3] = simd_all(v > 0) ? 1 : 0;
  o[4] = simd_any(v > 100) ? 1 : 0;
  o[5] = simd_prefix_inclusive_sum(v);
  o[6] = simd_shuffle(v, 31 - lane);
  o[7] = simd_shuffle_up(v, 2);
  o[8] = float(simd_sum(half(v)));
  o[9] = simd_is_first() ? 1 : 0;
  simdgroup_barrier(mem_flags::mem_none);
  // Divergent lanes: each side sums only the lanes that took it.
  if (lane < 10) {
    o[10] = simd_sum(1.0f);
  } else {
    o[10] = simd_sum(2.0f);
  }
  o[11] = float(simd_sum(uint(lane)));
}

// Histogram of x % 8 through threadgroup atomics, then device atomics.
kernel void histogram(
    const device uint* x [[buffer(0)]],
    device atomic_uint* bins [[buffer(1)]],
    uint gid [[thread_position_in_grid]],
    uint tid [[thread_index_in_threadgroup]]) {
  threadgroup atomic_uint local[8];
  if (tid < 8) {
    atomic_store_explicit(&local[tid], 0u, memory_order_relaxed);
  }
  threadgroup_barrier(mem_flags::mem_threadgroup);
  atomic_fetch_add_explicit(&local[x[gid] % 8], 1u, memory_order_relaxed);
  threadgroup_barrier(mem_flags::mem_threadgroup | mem_flags::mem_device);
  if (tid < 8) {
    uint c = atomic_load_explicit(&local[tid], memory_order_relaxed);
    atomic_fetch_add_explicit(&bins[tid], c, memory_order_relaxed);
  }
}
