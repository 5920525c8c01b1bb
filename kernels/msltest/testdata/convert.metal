// Test kernels for msltest: half and bfloat conversions and arithmetic.
#include <metal_stdlib>
using namespace metal;

// float -> half -> float and float -> bfloat -> float, keeping the bits too.
kernel void round_trip(
    const device float* x [[buffer(0)]],
    device half* h [[buffer(1)]],
    device bfloat* b [[buffer(2)]],
    device float* hf [[buffer(3)]],
    device float* bf [[buffer(4)]],
    uint i [[thread_position_in_grid]]) {
  half hv = half(x[i]);
  bfloat bv = bfloat(x[i]);
  h[i] = hv;
  b[i] = bv;
  hf[i] = float(hv);
  bf[i] = float(bv);
}

// half arithmetic rounds after each operation: y = (a * b + a) as halves,
// and a half4 dot product.
kernel void half_math(
    const device half* a [[buffer(0)]],
    const device half* b [[buffer(1)]],
    device half* y [[buffer(2)]],
    device half* d [[buffer(3)]],
    uint i [[thread_position_in_grid]]) {
  half p = a[i] * b[i];
  y[i] = p + a[i];
  half4 u = half4(a[i], b[i], 1.0h, 2.0h);
  d[i] = dot(u, u);
}
