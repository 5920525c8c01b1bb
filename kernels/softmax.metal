// softmax family: softmax over each row of a contiguous float32 [rows, cols] input, one
// threadgroup per row (size a multiple of 32, at most 1024): the row maximum, the sum of
// exp(x - max), then the normalised exponentials. Each thread reads and writes only its
// own elements, so out may alias x.
#include "prelude.metal"

struct SumOp {
    static float apply(float a, float b) { return a + b; }
};
// MaxOp propagates NaN.
struct MaxOp {
    static float apply(float a, float b) { return (a > b || a != a) ? a : b; }
};

template <typename Op> float simd_allreduce(float v) {
    for (ushort d = 16; d > 0; d >>= 1) {
        v = Op::apply(v, simd_shuffle_xor(v, d));
    }
    return v;
}

// block_allreduce combines v over the threadgroup; every thread gets the result.
template <typename Op>
float block_allreduce(float v, float identity, threadgroup float* shared, uint lane, uint sg, uint nsg) {
    v = simd_allreduce<Op>(v);
    if (nsg == 1) {
        return v;
    }
    if (lane == 0) {
        shared[sg] = v;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    v = lane < nsg ? shared[lane] : identity;
    v = simd_allreduce<Op>(v);
    threadgroup_barrier(mem_flags::mem_threadgroup);
    return v;
}

kernel void softmax_float32(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
                            constant RowConsts& p [[buffer(2)]],
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
    uint nsg = ntg / 32;
    float m = -INFINITY;
    for (int c = int(tid); c < p.cols; c += int(ntg)) {
        m = MaxOp::apply(m, xr[c]);
    }
    m = block_allreduce<MaxOp>(m, -INFINITY, shared, lane, sg, nsg);
    float s = 0.0f;
    for (int c = int(tid); c < p.cols; c += int(ntg)) {
        s += exp(xr[c] - m);
    }
    s = block_allreduce<SumOp>(s, 0.0f, shared, lane, sg, nsg);
    float inv = 1.0f / s;
    for (int c = int(tid); c < p.cols; c += int(ntg)) {
        yr[c] = exp(xr[c] - m) * inv;
    }
}
