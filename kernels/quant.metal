// quant family: affine-quantized matrices used in place (MLX's format; the rows, units
// and chunks in quant_rows.metal). A row's dot with x is, per group,
// scale*(x.q) + bias*sum(x): in qmm and qembed in the Go twin's four-lane order, groups
// summed in order; in qmv per unit of 8 codes or chunk of 32, spread over a threadgroup
// (below). Scales and biases are float, half or bfloat (one template per kernel). The
// MoE products (qswitch_glu) are the qswitch family (qswitch.metal).
#include "quant_rows.metal"

// qmv's threadgroup is (tx, ty) threads: ty row slots, whose tx threads (tx / 32
// simdgroups) share a row block of QMV_ROWS rows: thread t of a slot takes chunks
// (staged path) or units t, t + tx, ... of each row. The row blocks are split evenly
// among the ntg threadgroups; slot y takes blocks y, y + ty, ... of its threadgroup's.
template <typename S, int B, bool STAGED>
inline void qmv_rows(const device float* x, const device uchar* w, const device S* s,
                     const device S* b, device float* out, constant QuantParams& p,
                     threadgroup float* part, threadgroup float* xs, threadgroup float* cs, uint tg, uint ntg,
                     uint tid, uint lane, uint sg, uint tx, uint ty) {
    int blocks = (p.N + QMV_ROWS - 1) / QMV_ROWS;
    int bpt = (blocks + int(ntg) - 1) / int(ntg);  // row blocks a threadgroup
    if (int(tg) * bpt >= blocks) {
        return;  // an empty launch still dispatches one group; uniform, before any barrier
    }
    uint nthr = tx * ty;
    uint ry = tid / tx;  // this thread's row slot
    uint bt = tid % tx;  // its index in the slot
    uint nsg = tx / 32;
    bool staged = STAGED && p.K <= QMV_XMAX;  // uniform; Encode picks the staged entry only then
    QMat<S> m = {w, s, b, p.K, B, p.group};
    for (int i = 0; i < p.M; i++) {
        const device float* xr = x + size_t(i) * size_t(p.K);
        if (staged) {  // uniform
            q_stage_x<B>(xr, p.K, xs, cs, tid, lane, nthr);
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
        // The same trip count for every thread (q_rows_reduce may hold barriers).
        for (int b0 = 0; b0 < bpt; b0 += int(ty)) {
            int n0 = (int(tg) * bpt + b0 + int(ry)) * QMV_ROWS;
            bool live = b0 + int(ry) < bpt && n0 < p.N;
            int rows = live ? min(QMV_ROWS, p.N - n0) : 0;
            size_t nb = size_t(live ? n0 : p.N - 1);  // a dead slot reads row N - 1
            int last = max(rows, 1) - 1;
            int skip = 0;  // the block's first rows, not written (an overlapping last block)
            float acc[QMV_ROWS];
            for (int r = 0; r < QMV_ROWS; r++) {
                acc[r] = 0.0f;
            }
            if (staged) {
                // Every block read whole (row offsets known at compile time): the last
                // block starts QMV_ROWS rows before N (N >= QMV_ROWS here) and writes only
                // its own rows; a dead slot reads that block.
                int nf = min(live ? n0 : p.N, p.N - QMV_ROWS);
                skip = n0 - nf;
                rows = live ? QMV_ROWS : 0;
                n0 = nf;
                for (int c = int(bt); c < p.K / 32; c += int(tx)) {
                    float xc[32];
                    float xsum = q_chunk_x(xs, cs, c, xc);
                    q_rows_chunk<S, B>(m, size_t(nf), QMV_ROWS - 1, c, xc, xsum, 1.0f, acc);
                }
            } else {
                for (int u = int(bt); u < p.K / 8; u += int(tx)) {
                    float xv[8];
                    float xsu = q_load8(xr, u, xv);
                    q_rows_unit<S, B>(m, nb, last, u, xv, xsu, 1.0f, acc);
                }
            }
            int row;
            float y = q_rows_reduce(acc, part, rows, bt, lane, sg, ry * nsg, nsg, row);
            if (row >= 0 && row >= skip) {
                out[size_t(i) * size_t(p.N) + size_t(n0 + row)] = y;
            }
        }
        if (staged) {
            // The next x row overwrites xs: every thread must be done with this one.
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
    }
}

template <typename S>
inline void qmv_impl(const device float* x, const device uchar* w, const device S* s,
                     const device S* b, device float* out, constant QuantParams& p,
                     threadgroup float* part, uint tg, uint ntg, uint tid, uint lane, uint sg, uint tx, uint ty) {
    switch (p.bits) {
    case 2: qmv_rows<S, 2, false>(x, w, s, b, out, p, part, part, part, tg, ntg, tid, lane, sg, tx, ty); break;
    case 3: qmv_rows<S, 3, false>(x, w, s, b, out, p, part, part, part, tg, ntg, tid, lane, sg, tx, ty); break;
    case 4: qmv_rows<S, 4, false>(x, w, s, b, out, p, part, part, part, tg, ntg, tid, lane, sg, tx, ty); break;
    case 5: qmv_rows<S, 5, false>(x, w, s, b, out, p, part, part, part, tg, ntg, tid, lane, sg, tx, ty); break;
    case 6: qmv_rows<S, 6, false>(x, w, s, b, out, p, part, part, part, tg, ntg, tid, lane, sg, tx, ty); break;
    default: qmv_rows<S, 8, false>(x, w, s, b, out, p, part, part, part, tg, ntg, tid, lane, sg, tx, ty); break;
    }
}

// qmv_staged_impl is qmv_impl's staged path, for 2-, 4- and 8-bit rows of at most
// QMV_XMAX codes (its own entries, so the other widths' launches keep their registers).
template <typename S>
inline void qmv_staged_impl(const device float* x, const device uchar* w, const device S* s,
                            const device S* b, device float* out, constant QuantParams& p,
                            threadgroup float* part, threadgroup float* xs, threadgroup float* cs, uint tg, uint ntg,
                            uint tid, uint lane, uint sg, uint tx, uint ty) {
    switch (p.bits) {
    case 2: qmv_rows<S, 2, true>(x, w, s, b, out, p, part, xs, cs, tg, ntg, tid, lane, sg, tx, ty); break;
    case 4: qmv_rows<S, 4, true>(x, w, s, b, out, p, part, xs, cs, tg, ntg, tid, lane, sg, tx, ty); break;
    default: qmv_rows<S, 8, true>(x, w, s, b, out, p, part, xs, cs, tg, ntg, tid, lane, sg, tx, ty); break;
    }
}

template <typename S>
inline void qmm_impl(const device float* x, const device uchar* w, const device S* s,
                     const device S* b, device float* out, constant QuantParams& p, uint2 gid) {
    int n = int(gid.x), i = int(gid.y);
    if (n >= p.N || i >= p.M) return;
    QMat<S> m = {w, s, b, p.K, p.bits, p.group};
    out[i * p.N + n] = m.dot(x + i * p.K, n);
}


template <typename S>
inline void qembed_impl(const device int* ids, const device uchar* w, const device S* s,
                        const device S* b, device float* out, constant QEmbedParams& p,
                        device atomic_uint* err, uint tag, uint2 gid) {
    int i = int(gid.x), t = int(gid.y);
    if (i >= p.D || t >= p.T) return;
    int r = q_index(ids[t], p.V);
    if (r < 0) {
        index_fault(err, tag, uint(t), ids[t]);
    }
    QMat<S> m = {w, s, b, p.D, p.bits, p.group};
    out[t * p.D + i] = r < 0 ? 0.0f : m.value(r, i);
}

// Entries: one per kernel and scale type (the emulation harness and Metal's library
// both find kernels by their written names, so they are spelled out).

kernel void qmv_float32(const device float* x [[buffer(0)]], const device uchar* w [[buffer(1)]],
                       const device float* s [[buffer(2)]], const device float* b [[buffer(3)]],
                       device float* out [[buffer(4)]], constant QuantParams& p [[buffer(5)]],
                       uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                       uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                       uint3 tpg [[threads_per_threadgroup]], uint3 ntg [[threadgroups_per_grid]]) {
    threadgroup float part[QMV_MAXSG * QMV_ROWS];
    qmv_impl<float>(x, w, s, b, out, p, part, tg.x, ntg.x, tid, lane, sg, tpg.x, tpg.y);
}

kernel void qmv_staged_float32(const device float* x [[buffer(0)]], const device uchar* w [[buffer(1)]],
                          const device float* s [[buffer(2)]], const device float* b [[buffer(3)]],
                          device float* out [[buffer(4)]], constant QuantParams& p [[buffer(5)]],
                          uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                          uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                          uint3 tpg [[threads_per_threadgroup]], uint3 ntg [[threadgroups_per_grid]]) {
    threadgroup float part[QMV_MAXSG * QMV_ROWS];
    threadgroup float xs[QMV_XMAX / 32 * QMV_XPAD] __attribute__((aligned(16)));  // read as float4s
    threadgroup float cs[QMV_XMAX / 32];
    qmv_staged_impl<float>(x, w, s, b, out, p, part, xs, cs, tg.x, ntg.x, tid, lane, sg, tpg.x, tpg.y);
}

kernel void qmm_float32(const device float* x [[buffer(0)]], const device uchar* w [[buffer(1)]],
                       const device float* s [[buffer(2)]], const device float* b [[buffer(3)]],
                       device float* out [[buffer(4)]], constant QuantParams& p [[buffer(5)]],
                       uint2 gid [[thread_position_in_grid]]) {
    qmm_impl<float>(x, w, s, b, out, p, gid);
}

kernel void qembed_float32(const device int* ids [[buffer(0)]], const device uchar* w [[buffer(1)]],
                          const device float* s [[buffer(2)]], const device float* b [[buffer(3)]],
                          device float* out [[buffer(4)]], constant QEmbedParams& p [[buffer(5)]],
                          device atomic_uint* err [[buffer(6)]], constant uint& tag [[buffer(7)]],
                          uint2 gid [[thread_position_in_grid]]) {
    qembed_impl<float>(ids, w, s, b, out, p, err, tag, gid);
}

kernel void qmv_float16(const device float* x [[buffer(0)]], const device uchar* w [[buffer(1)]],
                       const device half* s [[buffer(2)]], const device half* b [[buffer(3)]],
                       device float* out [[buffer(4)]], constant QuantParams& p [[buffer(5)]],
                       uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                       uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                       uint3 tpg [[threads_per_threadgroup]], uint3 ntg [[threadgroups_per_grid]]) {
    threadgroup float part[QMV_MAXSG * QMV_ROWS];
    qmv_impl<half>(x, w, s, b, out, p, part, tg.x, ntg.x, tid, lane, sg, tpg.x, tpg.y);
}

kernel void qmv_staged_float16(const device float* x [[buffer(0)]], const device uchar* w [[buffer(1)]],
                          const device half* s [[buffer(2)]], const device half* b [[buffer(3)]],
                          device float* out [[buffer(4)]], constant QuantParams& p [[buffer(5)]],
                          uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                          uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                          uint3 tpg [[threads_per_threadgroup]], uint3 ntg [[threadgroups_per_grid]]) {
    threadgroup float part[QMV_MAXSG * QMV_ROWS];
    threadgroup float xs[QMV_XMAX / 32 * QMV_XPAD] __attribute__((aligned(16)));  // read as float4s
    threadgroup float cs[QMV_XMAX / 32];
    qmv_staged_impl<half>(x, w, s, b, out, p, part, xs, cs, tg.x, ntg.x, tid, lane, sg, tpg.x, tpg.y);
}

kernel void qmm_float16(const device float* x [[buffer(0)]], const device uchar* w [[buffer(1)]],
                       const device half* s [[buffer(2)]], const device half* b [[buffer(3)]],
                       device float* out [[buffer(4)]], constant QuantParams& p [[buffer(5)]],
                       uint2 gid [[thread_position_in_grid]]) {
    qmm_impl<half>(x, w, s, b, out, p, gid);
}

kernel void qembed_float16(const device int* ids [[buffer(0)]], const device uchar* w [[buffer(1)]],
                          const device half* s [[buffer(2)]], const device half* b [[buffer(3)]],
                          device float* out [[buffer(4)]], constant QEmbedParams& p [[buffer(5)]],
                          device atomic_uint* err [[buffer(6)]], constant uint& tag [[buffer(7)]],
                          uint2 gid [[thread_position_in_grid]]) {
    qembed_impl<half>(ids, w, s, b, out, p, err, tag, gid);
}

kernel void qmv_bfloat16(const device float* x [[buffer(0)]], const device uchar* w [[buffer(1)]],
                       const device bfloat* s [[buffer(2)]], const device bfloat* b [[buffer(3)]],
                       device float* out [[buffer(4)]], constant QuantParams& p [[buffer(5)]],
                       uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                       uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                       uint3 tpg [[threads_per_threadgroup]], uint3 ntg [[threadgroups_per_grid]]) {
    threadgroup float part[QMV_MAXSG * QMV_ROWS];
    qmv_impl<bfloat>(x, w, s, b, out, p, part, tg.x, ntg.x, tid, lane, sg, tpg.x, tpg.y);
}

kernel void qmv_staged_bfloat16(const device float* x [[buffer(0)]], const device uchar* w [[buffer(1)]],
                          const device bfloat* s [[buffer(2)]], const device bfloat* b [[buffer(3)]],
                          device float* out [[buffer(4)]], constant QuantParams& p [[buffer(5)]],
                          uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                          uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                          uint3 tpg [[threads_per_threadgroup]], uint3 ntg [[threadgroups_per_grid]]) {
    threadgroup float part[QMV_MAXSG * QMV_ROWS];
    threadgroup float xs[QMV_XMAX / 32 * QMV_XPAD] __attribute__((aligned(16)));  // read as float4s
    threadgroup float cs[QMV_XMAX / 32];
    qmv_staged_impl<bfloat>(x, w, s, b, out, p, part, xs, cs, tg.x, ntg.x, tid, lane, sg, tpg.x, tpg.y);
}

kernel void qmm_bfloat16(const device float* x [[buffer(0)]], const device uchar* w [[buffer(1)]],
                       const device bfloat* s [[buffer(2)]], const device bfloat* b [[buffer(3)]],
                       device float* out [[buffer(4)]], constant QuantParams& p [[buffer(5)]],
                       uint2 gid [[thread_position_in_grid]]) {
    qmm_impl<bfloat>(x, w, s, b, out, p, gid);
}

kernel void qembed_bfloat16(const device int* ids [[buffer(0)]], const device uchar* w [[buffer(1)]],
                          const device bfloat* s [[buffer(2)]], const device bfloat* b [[buffer(3)]],
                          device float* out [[buffer(4)]], constant QEmbedParams& p [[buffer(5)]],
                          device atomic_uint* err [[buffer(6)]], constant uint& tag [[buffer(7)]],
                          uint2 gid [[thread_position_in_grid]]) {
    qembed_impl<bfloat>(ids, w, s, b, out, p, err, tag, gid);
}
