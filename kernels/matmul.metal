// matmul family: out[b, m, n] = dot(x[b] row m, w[b] row n), rows dense and K long.
#include "gemm.metal"

// linear: a threadgroup of ntg threads (LIN_THREADS, or fewer where the pipeline allows
// fewer: any multiple of 32) computes LIN_ROWS outputs of one x row.
// Thread t reads the LIN_VEC elements from LIN_VEC * t of each w row, then from
// LIN_VEC * (t + ntg), ...: a SIMD group reads 32 * LIN_VEC consecutive
// elements of a row, and each thread has LIN_ROWS * LIN_VEC loads in flight. Partial
// sums are added by simd_sum, then across SIMD groups in threadgroup memory in a fixed
// order. The products are the Go twin's, added in another order (within the catalog's
// tolerance).
#define LIN_ROWS 4
#define LIN_THREADS 256
#define LIN_VEC 4
#define LIN_SG (LIN_THREADS / 32)

template <typename T>
inline void linear_impl(const device T* x, const device T* w, device T* out,
                        constant MatmulParams& p, threadgroup float* part, uint3 tg, uint tid,
                        uint lane, uint sg, uint ntg) {
    int n0 = int(tg.x) * LIN_ROWS, m = int(tg.y), b = int(tg.z);
    if (m >= p.m || b >= p.batch) {
        return;  // an empty launch still dispatches one group; uniform, before any barrier
    }
    int rows = min(LIN_ROWS, p.n - n0);
    if (rows <= 0) {
        return;  // likewise
    }
    // 64-bit offsets: a weight can pass 2^31 elements.
    const device T* xr = x + size_t(b) * size_t(p.x_stride) + size_t(m) * size_t(p.k);
    const device T* wr = w + size_t(b) * size_t(p.w_stride) + size_t(n0) * size_t(p.k);
    float acc[LIN_ROWS];
    for (int r = 0; r < LIN_ROWS; r++) {
        acc[r] = 0.0f;
    }
    // Each thread reads LIN_VEC consecutive elements of every row at once: constant
    // loop bounds, rows past the last repeat it and elements past K repeat element
    // K - 1 (their products are dropped), so every load is valid and all are in flight
    // together.
    int last = rows - 1;
    for (int k = int(tid) * LIN_VEC; k < p.k; k += int(ntg) * LIN_VEC) {
        float xv[LIN_VEC];
        int kk[LIN_VEC];
        for (int u = 0; u < LIN_VEC; u++) {
            kk[u] = min(k + u, p.k - 1);
            xv[u] = float(xr[kk[u]]);
        }
        float wv[LIN_ROWS][LIN_VEC];
        for (int r = 0; r < LIN_ROWS; r++) {
            const device T* w_r = wr + size_t(min(r, last)) * size_t(p.k);
            for (int u = 0; u < LIN_VEC; u++) {
                wv[r][u] = float(w_r[kk[u]]);
            }
        }
        for (int r = 0; r < LIN_ROWS; r++) {
            for (int u = 0; u < LIN_VEC; u++) {
                acc[r] += k + u < p.k ? xv[u] * wv[r][u] : 0.0f;
            }
        }
    }
    for (int r = 0; r < LIN_ROWS; r++) {
        float v = simd_sum(acc[r]);
        if (lane == 0) {
            part[sg * LIN_ROWS + r] = v;
        }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (int(tid) < rows) {
        float y = 0.0f;
        for (int g = 0; g < int(ntg) / 32; g++) {
            y += part[g * LIN_ROWS + tid];
        }
        out[(size_t(b) * size_t(p.m) + size_t(m)) * size_t(p.n) + size_t(n0) + tid] = T(y);
    }
}

kernel void linear_float32(const device float* x [[buffer(0)]],
                           const device float* w [[buffer(1)]],
                           device float* out [[buffer(2)]],
                           constant MatmulParams& p [[buffer(3)]],
                           uint3 tg [[threadgroup_position_in_grid]],
                           uint tid [[thread_index_in_threadgroup]],
                           uint lane [[thread_index_in_simdgroup]],
                           uint sg [[simdgroup_index_in_threadgroup]],
                           uint ntg [[threads_per_threadgroup]]) {
    threadgroup float part[LIN_SG * LIN_ROWS];
    linear_impl(x, w, out, p, part, tg, tid, lane, sg, ntg);
}

kernel void linear_float16(const device half* x [[buffer(0)]],
                           const device half* w [[buffer(1)]],
                           device half* out [[buffer(2)]],
                           constant MatmulParams& p [[buffer(3)]],
                           uint3 tg [[threadgroup_position_in_grid]],
                           uint tid [[thread_index_in_threadgroup]],
                           uint lane [[thread_index_in_simdgroup]],
                           uint sg [[simdgroup_index_in_threadgroup]],
                           uint ntg [[threads_per_threadgroup]]) {
    threadgroup float part[LIN_SG * LIN_ROWS];
    linear_impl(x, w, out, p, part, tg, tid, lane, sg, ntg);
}

// gemm: many x rows (prefill) take the tiled product of gemm.metal, a threadgroup of
// GEMM_THREADS a tile of out: x = column tiles, y = row tiles, z = batch. The gemm4
// entries take 4 x 4 a thread (64 x 64 tiles), the gemm8 entries 8 x 8 (128 x 128).
template <int TM, int TN, typename T>
inline void gemm_impl(const device T* x, const device T* w, device T* out, constant MatmulParams& p,
                      threadgroup float* As, threadgroup float* Bs, uint3 tg, uint tid) {
    int b = int(tg.z);
    if (b >= p.batch) {
        return;  // an empty launch still dispatches one group; uniform, before any barrier
    }
    const int BK = GEMM_BK(TN);
    GemmRows<T, GEMM_BM(TM) * BK / GEMM_THREADS, BK> la = {x + size_t(b) * size_t(p.x_stride), p.m, p.k};
    GemmRows<T, GEMM_BN(TN) * BK / GEMM_THREADS, BK> lb = {w + size_t(b) * size_t(p.w_stride), p.n, p.k};
    gemm_run<TM, TN>(la, lb, out + size_t(b) * size_t(p.m) * size_t(p.n), p.m, p.n, p.k, As, Bs, tg, tid);
}

kernel void gemm4_float32(const device float* x [[buffer(0)]],
                          const device float* w [[buffer(1)]],
                          device float* out [[buffer(2)]],
                          constant MatmulParams& p [[buffer(3)]],
                          uint3 tg [[threadgroup_position_in_grid]],
                          uint tid [[thread_index_in_threadgroup]]) {
    threadgroup float As[GEMM_AS(4, 4)] __attribute__((aligned(16)));  // read as float4s
    threadgroup float Bs[GEMM_BS(4)] __attribute__((aligned(16)));
    gemm_impl<4, 4>(x, w, out, p, As, Bs, tg, tid);
}

kernel void gemm4_float16(const device half* x [[buffer(0)]],
                          const device half* w [[buffer(1)]],
                          device half* out [[buffer(2)]],
                          constant MatmulParams& p [[buffer(3)]],
                          uint3 tg [[threadgroup_position_in_grid]],
                          uint tid [[thread_index_in_threadgroup]]) {
    threadgroup float As[GEMM_AS(4, 4)] __attribute__((aligned(16)));  // read as float4s
    threadgroup float Bs[GEMM_BS(4)] __attribute__((aligned(16)));
    gemm_impl<4, 4>(x, w, out, p, As, Bs, tg, tid);
}

kernel void gemm8_float32(const device float* x [[buffer(0)]],
                          const device float* w [[buffer(1)]],
                          device float* out [[buffer(2)]],
                          constant MatmulParams& p [[buffer(3)]],
                          uint3 tg [[threadgroup_position_in_grid]],
                          uint tid [[thread_index_in_threadgroup]]) {
    threadgroup float As[GEMM_AS(8, 8)] __attribute__((aligned(16)));  // read as float4s
    threadgroup float Bs[GEMM_BS(8)] __attribute__((aligned(16)));
    gemm_impl<8, 8>(x, w, out, p, As, Bs, tg, tid);
}

kernel void gemm8_float16(const device half* x [[buffer(0)]],
                          const device half* w [[buffer(1)]],
                          device half* out [[buffer(2)]],
                          constant MatmulParams& p [[buffer(3)]],
                          uint3 tg [[threadgroup_position_in_grid]],
                          uint tid [[thread_index_in_threadgroup]]) {
    threadgroup float As[GEMM_AS(8, 8)] __attribute__((aligned(16)));  // read as float4s
    threadgroup float Bs[GEMM_BS(8)] __attribute__((aligned(16)));
    gemm_impl<8, 8>(x, w, out, p, As, Bs, tg, tid);
}
