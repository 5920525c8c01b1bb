// Planted mistakes for the address-space lint; each line below must be reported.
#include <metal_stdlib>
using namespace metal;

float plain_sum(const float* v, int n) { // a helper taking an unqualified pointer
    float s = 0.0f;
    for (int i = 0; i < n; i++) s += v[i];
    return s;
}

kernel void bad(const float* a [[buffer(0)]],
                device float* out [[buffer(1)]],
                const device float* b [[buffer(2)]],
                uint i [[thread_position_in_grid]]) {
    threadgroup float shared[32];
    shared[i % 32] = b[i];
    device float* alias = shared;
    out[i] = a[i] * 1.5 + plain_sum(b, 4) + alias[0];
    double d = 2.0f;
    out[i] += float(d);
}
