// reduce family: one threadgroup per row of a contiguous [rows, cols] input, reduced
// along cols. Threads stride over the row, then a SIMD-group butterfly and a second
// butterfly over the per-simdgroup partials (threadgroup memory) combine them.
// The threadgroup size is a multiple of 32, at most 1024.
#include "prelude.metal"

// Combiners. Max and min propagate NaN (x != x is never true for integers).
struct SumOp {
    template <typename T> static T apply(T a, T b) { return a + b; }
};
struct MaxOp {
    template <typename T> static T apply(T a, T b) { return (a > b || a != a) ? a : b; }
};
struct MinOp {
    template <typename T> static T apply(T a, T b) { return (a < b || a != a) ? a : b; }
};

// simd_allreduce leaves the combination of all 32 lanes in every lane.
template <typename Op, typename T> T simd_allreduce(T v) {
    for (ushort d = 16; d > 0; d >>= 1) {
        v = Op::apply(v, simd_shuffle_xor(v, d));
    }
    return v;
}

// block_allreduce combines v over the threadgroup; every thread gets the result.
// shared holds one partial per simdgroup and may be reused once this returns.
template <typename Op, typename T>
T block_allreduce(T v, T identity, threadgroup T* shared, uint lane, uint sg, uint nsg) {
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

template <typename Op, typename T, typename A>
void reduce_row(const device T* x, device A* out, constant RowConsts& p, A identity,
                threadgroup A* shared, uint row, uint tid, uint ntg, uint lane, uint sg) {
    const device T* xr = x + size_t(row) * size_t(p.cols);
    A acc = identity;
    for (int c = int(tid); c < p.cols; c += int(ntg)) {
        acc = Op::apply(acc, A(xr[c]));
    }
    acc = block_allreduce<Op>(acc, identity, shared, lane, sg, ntg / 32);
    if (tid == 0) {
        out[row] = acc;
    }
}

kernel void reduce_sum_float32(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
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
    reduce_row<SumOp, float, float>(x, out, p, 0.0f, shared, row, tid, ntg, lane, sg);
}

kernel void reduce_sum_int32(const device int* x [[buffer(0)]], device int* out [[buffer(1)]],
                             constant RowConsts& p [[buffer(2)]],
                             uint row [[threadgroup_position_in_grid]],
                             uint tid [[thread_position_in_threadgroup]],
                             uint ntg [[threads_per_threadgroup]],
                             uint lane [[thread_index_in_simdgroup]],
                             uint sg [[simdgroup_index_in_threadgroup]]) {
    threadgroup int shared[32];
    if (int(row) >= p.rows) {
        return;
    }
    reduce_row<SumOp, int, int>(x, out, p, 0, shared, row, tid, ntg, lane, sg);
}

kernel void reduce_max_float32(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
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
    reduce_row<MaxOp, float, float>(x, out, p, -INFINITY, shared, row, tid, ntg, lane, sg);
}

kernel void reduce_max_int32(const device int* x [[buffer(0)]], device int* out [[buffer(1)]],
                             constant RowConsts& p [[buffer(2)]],
                             uint row [[threadgroup_position_in_grid]],
                             uint tid [[thread_position_in_threadgroup]],
                             uint ntg [[threads_per_threadgroup]],
                             uint lane [[thread_index_in_simdgroup]],
                             uint sg [[simdgroup_index_in_threadgroup]]) {
    threadgroup int shared[32];
    if (int(row) >= p.rows) {
        return;
    }
    reduce_row<MaxOp, int, int>(x, out, p, -2147483647 - 1, shared, row, tid, ntg, lane, sg);
}

kernel void reduce_min_float32(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
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
    reduce_row<MinOp, float, float>(x, out, p, INFINITY, shared, row, tid, ntg, lane, sg);
}

kernel void reduce_min_int32(const device int* x [[buffer(0)]], device int* out [[buffer(1)]],
                             constant RowConsts& p [[buffer(2)]],
                             uint row [[threadgroup_position_in_grid]],
                             uint tid [[thread_position_in_threadgroup]],
                             uint ntg [[threads_per_threadgroup]],
                             uint lane [[thread_index_in_simdgroup]],
                             uint sg [[simdgroup_index_in_threadgroup]]) {
    threadgroup int shared[32];
    if (int(row) >= p.rows) {
        return;
    }
    reduce_row<MinOp, int, int>(x, out, p, 2147483647, shared, row, tid, ntg, lane, sg);
}

kernel void reduce_mean_float32(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
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
    const device float* xr = x + size_t(row) * size_t(p.cols);
    float acc = 0.0f;
    for (int c = int(tid); c < p.cols; c += int(ntg)) {
        acc += xr[c];
    }
    acc = block_allreduce<SumOp>(acc, 0.0f, shared, lane, sg, ntg / 32);
    if (tid == 0) {
        out[row] = acc / float(p.cols);
    }
}

// logsumexp: the row maximum (replaced by 0 when infinite), then the sum of exp(x - max).
kernel void reduce_logsumexp_float32(const device float* x [[buffer(0)]], device float* out [[buffer(1)]],
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
    const device float* xr = x + size_t(row) * size_t(p.cols);
    float m = -INFINITY;
    for (int c = int(tid); c < p.cols; c += int(ntg)) {
        m = MaxOp::apply(m, xr[c]);
    }
    m = block_allreduce<MaxOp>(m, -INFINITY, shared, lane, sg, ntg / 32);
    if (isinf(m)) {
        m = 0.0f;
    }
    float s = 0.0f;
    for (int c = int(tid); c < p.cols; c += int(ntg)) {
        s += exp(xr[c] - m);
    }
    s = block_allreduce<SumOp>(s, 0.0f, shared, lane, sg, ntg / 32);
    if (tid == 0) {
        out[row] = log(s) + m;
    }
}

// arg_better reports whether candidate (bv, bi) beats (av, ai): NaN first, then the
// larger value, then the lower index; index -1 marks an empty candidate.
template <typename T> bool arg_better(T bv, int bi, T av, int ai) {
    if (bi < 0) {
        return false;
    }
    if (ai < 0) {
        return true;
    }
    bool bn = bv != bv;
    bool an = av != av;
    if (bn || an) {
        return bn && (!an || bi < ai);
    }
    return bv > av || (bv == av && bi < ai);
}

template <typename T> void simd_argbest(thread T& v, thread int& i) {
    for (ushort d = 16; d > 0; d >>= 1) {
        T ov = simd_shuffle_xor(v, d);
        int oi = simd_shuffle_xor(i, d);
        if (arg_better(ov, oi, v, i)) {
            v = ov;
            i = oi;
        }
    }
}

template <typename T>
void argmax_row(const device T* x, device int* out, constant RowConsts& p, threadgroup T* sv,
                threadgroup int* si, uint row, uint tid, uint ntg, uint lane, uint sg) {
    const device T* xr = x + size_t(row) * size_t(p.cols);
    T v = T(0);
    int i = -1;
    for (int c = int(tid); c < p.cols; c += int(ntg)) {
        if (arg_better(xr[c], c, v, i)) {
            v = xr[c];
            i = c;
        }
    }
    simd_argbest(v, i);
    uint nsg = ntg / 32;
    if (nsg > 1) {
        if (lane == 0) {
            sv[sg] = v;
            si[sg] = i;
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        v = lane < nsg ? sv[lane] : T(0);
        i = lane < nsg ? si[lane] : -1;
        simd_argbest(v, i);
    }
    if (tid == 0) {
        out[row] = max(i, 0);
    }
}

kernel void reduce_argmax_float32(const device float* x [[buffer(0)]], device int* out [[buffer(1)]],
                                  constant RowConsts& p [[buffer(2)]],
                                  uint row [[threadgroup_position_in_grid]],
                                  uint tid [[thread_position_in_threadgroup]],
                                  uint ntg [[threads_per_threadgroup]],
                                  uint lane [[thread_index_in_simdgroup]],
                                  uint sg [[simdgroup_index_in_threadgroup]]) {
    threadgroup float sv[32];
    threadgroup int si[32];
    if (int(row) >= p.rows) {
        return;
    }
    argmax_row<float>(x, out, p, sv, si, row, tid, ntg, lane, sg);
}

kernel void reduce_argmax_int32(const device int* x [[buffer(0)]], device int* out [[buffer(1)]],
                                constant RowConsts& p [[buffer(2)]],
                                uint row [[threadgroup_position_in_grid]],
                                uint tid [[thread_position_in_threadgroup]],
                                uint ntg [[threads_per_threadgroup]],
                                uint lane [[thread_index_in_simdgroup]],
                                uint sg [[simdgroup_index_in_threadgroup]]) {
    threadgroup int sv[32];
    threadgroup int si[32];
    if (int(row) >= p.rows) {
        return;
    }
    argmax_row<int>(x, out, p, sv, si, row, tid, ntg, lane, sg);
}

kernel void reduce_sum_uint32(const device uint* x [[buffer(0)]], device uint* out [[buffer(1)]],
                              constant RowConsts& p [[buffer(2)]],
                              uint row [[threadgroup_position_in_grid]],
                              uint tid [[thread_position_in_threadgroup]],
                              uint ntg [[threads_per_threadgroup]],
                              uint lane [[thread_index_in_simdgroup]],
                              uint sg [[simdgroup_index_in_threadgroup]]) {
    threadgroup uint shared[32];
    if (int(row) >= p.rows) {
        return;
    }
    reduce_row<SumOp, uint, uint>(x, out, p, 0u, shared, row, tid, ntg, lane, sg);
}

kernel void reduce_max_uint32(const device uint* x [[buffer(0)]], device uint* out [[buffer(1)]],
                              constant RowConsts& p [[buffer(2)]],
                              uint row [[threadgroup_position_in_grid]],
                              uint tid [[thread_position_in_threadgroup]],
                              uint ntg [[threads_per_threadgroup]],
                              uint lane [[thread_index_in_simdgroup]],
                              uint sg [[simdgroup_index_in_threadgroup]]) {
    threadgroup uint shared[32];
    if (int(row) >= p.rows) {
        return;
    }
    reduce_row<MaxOp, uint, uint>(x, out, p, 0u, shared, row, tid, ntg, lane, sg);
}

kernel void reduce_min_uint32(const device uint* x [[buffer(0)]], device uint* out [[buffer(1)]],
                              constant RowConsts& p [[buffer(2)]],
                              uint row [[threadgroup_position_in_grid]],
                              uint tid [[thread_position_in_threadgroup]],
                              uint ntg [[threads_per_threadgroup]],
                              uint lane [[thread_index_in_simdgroup]],
                              uint sg [[simdgroup_index_in_threadgroup]]) {
    threadgroup uint shared[32];
    if (int(row) >= p.rows) {
        return;
    }
    reduce_row<MinOp, uint, uint>(x, out, p, 4294967295u, shared, row, tid, ntg, lane, sg);
}

kernel void reduce_argmax_uint32(const device uint* x [[buffer(0)]], device int* out [[buffer(1)]],
                                 constant RowConsts& p [[buffer(2)]],
                                 uint row [[threadgroup_position_in_grid]],
                                 uint tid [[thread_position_in_threadgroup]],
                                 uint ntg [[threads_per_threadgroup]],
                                 uint lane [[thread_index_in_simdgroup]],
                                 uint sg [[simdgroup_index_in_threadgroup]]) {
    threadgroup uint sv[32];
    threadgroup int si[32];
    if (int(row) >= p.rows) {
        return;
    }
    argmax_row<uint>(x, out, p, sv, si, row, tid, ntg, lane, sg);
}
