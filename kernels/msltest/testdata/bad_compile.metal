// Test kernel for msltest: does not compile (float4 has no member q).
#include <metal_stdlib>
using namespace metal;

kernel void no_member(
    device float4* a [[buffer(0)]],
    uint gid [[thread_position_in_grid]]) {
  a[gid].q = 1.0f;
}
