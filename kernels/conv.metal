// conv family: valid depthwise cross-correlation over time (the Gated DeltaNet conv).
// x [B, T, C] and w [C, K] are dense; out [B, T-K+1, C]. One thread per output element,
// channels fastest so neighbouring threads read neighbouring x elements.
#include "prelude.metal"

// Accumulates in float, taps oldest first, as the Go twin does.
template <typename T>
void depthwise_conv1d_impl(const device T* x, const device T* w, device T* out,
                           constant ConvConsts& p, uint i) {
    const int n = p.B * p.Tout * p.C;
    if (int(i) >= n) {
        return;
    }
    const int c = int(i) % p.C;
    const int bt = int(i) / p.C;
    const int t = bt % p.Tout;
    const int b = bt / p.Tout;
    const device T* xs = x + (b * p.T + t) * p.C + c;
    const device T* ws = w + c * p.K;
    float acc = 0.0f;
    for (int j = 0; j < p.K; j++) {
        acc += float(ws[j]) * float(xs[j * p.C]);
    }
    out[i] = T(acc);
}

kernel void depthwise_conv1d_float32(const device float* x [[buffer(0)]],
                                     const device float* w [[buffer(1)]],
                                     device float* out [[buffer(2)]],
                                     constant ConvConsts& p [[buffer(3)]],
                                     uint i [[thread_position_in_grid]]) {
    depthwise_conv1d_impl(x, w, out, p, i);
}

kernel void depthwise_conv1d_float16(const device half* x [[buffer(0)]],
                                     const device half* w [[buffer(1)]],
                                     device half* out [[buffer(2)]],
                                     constant ConvConsts& p [[buffer(3)]],
                                     uint i [[thread_position_in_grid]]) {
    depthwise_conv1d_impl(x, w, out, p, i);
}

kernel void depthwise_conv1d_bfloat16(const device bfloat* x [[buffer(0)]],
                                      const device bfloat* w [[buffer(1)]],
                                      device bfloat* out [[buffer(2)]],
                                      constant ConvConsts& p [[buffer(3)]],
                                      uint i [[thread_position_in_grid]]) {
    depthwise_conv1d_impl(x, w, out, p, i);
}
