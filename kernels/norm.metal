// norm family: RMS normalisation of each row of a contiguous float32 [rows, cols] input,
// one threadgroup per row (size a multiple of 32, at most 1024):
//   rms_norm:       y = x * rsqrt(mean(x^2) + eps) * w
//   gated_rms_norm: y = x * rsqrt(mean(x^2) + eps) * w * silu(z)
// w is read only when has_weight is set. Each thread reads and writes only its own
// elements, so out may alias x.
#include "prelude.metal"

// row_sum adds v over the threadgroup; every thread gets the result.
float row_sum(float v, threadgroup float* shared, uint lane, uint sg, uint nsg) {
    v = simd_sum(v);
    if (nsg == 1) {
        return v;
    }
    if (lane == 0) {
        shared[sg] = v;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    v = simd_sum(lane < nsg ? shared[lane] : 0.0f);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    return v;
}

// rms_scale is rsqrt(mean(x^2) + eps) of one row.
float rms_scale(const device float* xr, constant NormConsts& p, threadgroup float* shared,
                uint tid, uint ntg, uint lane, uint sg) {
    float s = 0.0f;
    for (int c = int(tid); c < p.cols; c += int(ntg)) {
        s += xr[c] * xr[c];
    }
    s = row_sum(s, shared, lane, sg, ntg / 32);
    return rsqrt(s / float(p.cols) + p.eps);
}

kernel void rms_norm_float32(const device float* x [[buffer(0)]], const device float* w [[buffer(1)]],
                             device float* out [[buffer(2)]], constant NormConsts& p [[buffer(3)]],
                             uint row [[threadgroup_position_in_grid]],
                             uint tid [[thread_position_in_threadgroup]],
                             uint ntg [[threads_per_threadgroup]],
                             uint lane [[thread_index_in_simdgroup]],
                             uint sg [[simdgroup_index_in_threadgroup]]) {
    threadgroup float shared[32];
    if (int(row) >= p.rows) {
        return;
    }
    size_t base = size_t(row) * size_t(p.cols);
    const device float* xr = x + base;
    device float* yr = out + base;
    float s = rms_scale(xr, p, shared, tid, ntg, lane, sg);
    for (int c = int(tid); c < p.cols; c += int(ntg)) {
        float y = xr[c] * s;
        yr[c] = p.has_weight ? y * w[c] : y;
    }
}

kernel void gated_rms_norm_float32(const device float* x [[buffer(0)]], const device float* z [[buffer(1)]],
                                   const device float* w [[buffer(2)]], device float* out [[buffer(3)]],
                                   constant NormConsts& p [[buffer(4)]],
                                   uint row [[threadgroup_position_in_grid]],
                                   uint tid [[thread_position_in_threadgroup]],
                                   uint ntg [[threads_per_threadgroup]],
                                   uint lane [[thread_index_in_simdgroup]],
                                   uint sg [[simdgroup_index_in_threadgroup]]) {
    threadgroup float shared[32];
    if (int(row) >= p.rows) {
        return;
    }
    size_t base = size_t(row) * size_t(p.cols);
    const device float* xr = x + base;
    const device float* zr = z + base;
    device float* yr = out + base;
    float s = rms_scale(xr, p, shared, tid, ntg, lane, sg);
    for (int c = int(tid); c < p.cols; c += int(ntg)) {
        float y = xr[c] * s;
        if (p.has_weight) {
            y *= w[c];
        }
        float g = zr[c];
        yr[c] = y * (g / (1.0f + exp(-g)));
    }
}
