// quant family: affine-quantized matrices used in place (MLX's format; the rows, units
// and chunks in quant_rows.metal). A row's dot with x is, per group,
// scale*(x.q) + bias*sum(x): in qmm below 4 rows (one thread an output) and qembed in the
// Go twin's four-lane order, groups summed in order; in qmv per unit of 8 codes or chunk
// of 32, spread over a threadgroup (below). qmm from 4 rows takes gemm.metal's tiles,
// which add x * (scale * q + bias), the codes dequantized once a tile. Scales and biases are float, half or bfloat (one template per kernel). The
// MoE products (qswitch_glu) are the qswitch family (qswitch.metal).
#include "quant_rows.metal"
#include "gemm.metal"

// The pipelined staged qmv (the qmv_pipe entries, 4-bit rows of at most QMV_PIPE_K codes,
// one simdgroup a slot): a lane takes the same chunk of every row block, and a slot
// issues its next block's loads before it adds this one's (two register buffers), so its
// loads stay in flight while it computes. 168 registers on the H200 translation, so 12
// slots a threadgroup, one threadgroup a core: 1024 -> 248320 at 4 bits 50.3 us against
// 55.0 for the staged loop at 16 slots (docs/h200/run16-exp5.log; at 8 slots 56.7).
#define QMV_PIPE_K 1024

// qmv_pipe_first is row block b's first row (the last block read whole, a dead block
// reading the last one), with the block's first rows to skip and whether it is live.
inline int qmv_pipe_first(int tg, int bpt, int b, int N, thread int& skip, thread bool& live) {
    int n0 = (tg * bpt + b) * QMV_ROWS;
    live = b < bpt && n0 < N;
    int nf = min(live ? n0 : N, N - QMV_ROWS);
    skip = n0 - nf;
    return nf;
}

// qmv_pipe_block adds a loaded block (chunk c of its rows; a lane past the row's chunks,
// on false, adds zeros), reduces it over the simdgroup and writes its live rows.
template <int B>
inline void qmv_pipe_block(thread const uint* wd, thread const float* sc, thread const float* bi,
                           threadgroup const float* xs, threadgroup const float* cs, int c, bool on, int nf,
                           int skip, bool live, device float* outr, threadgroup float* part, uint lane, uint sg) {
    float acc[QMV_ROWS];
    for (int r = 0; r < QMV_ROWS; r++) {
        acc[r] = 0.0f;
    }
    float xc[32];
    float xsum = q_chunk_x(xs, cs, c, xc);
    if (!on) {
        for (int j = 0; j < 32; j++) {
            xc[j] = 0.0f;
        }
        xsum = 0.0f;
    }
    q_chunk_add<B, QMV_ROWS>(wd, sc, bi, xc, xsum, 1.0f, acc);
    int row;
    float y = q_rows_reduce(acc, part, live ? QMV_ROWS : 0, lane, lane, sg, sg, 1, row);
    if (row >= 0 && row >= skip) {
        outr[nf + row] = y;
    }
}

// qmv_pipe runs slot ry's row blocks ry, ry + ty, ... of threadgroup tg for one x row
// (staged in xs and cs), two at a time: the second's loads are issued before the first
// is added, the third's before the second is. Every slot makes the same trips.
template <typename S, int B>
inline void qmv_pipe(QMat<S> m, int N, int K, device float* outr, threadgroup const float* xs,
                     threadgroup const float* cs, threadgroup float* part, int tg, int bpt, int ty, int ry,
                     uint lane, uint sg) {
    int c = min(int(lane), K / 32 - 1);
    bool on = int(lane) < K / 32;
    uint wa[QMV_ROWS * B], wb[QMV_ROWS * B];
    float sa[QMV_ROWS], ba[QMV_ROWS], sb[QMV_ROWS], bb[QMV_ROWS];
    int skipA, skipB;
    bool liveA, liveB;
    int nA = qmv_pipe_first(tg, bpt, ry, N, skipA, liveA);
    q_chunk_load<S, B, QMV_ROWS>(m, size_t(nA), QMV_ROWS - 1, c, wa, sa, ba);
    for (int b0 = 0; b0 < bpt; b0 += 2 * ty) {
        int nB = qmv_pipe_first(tg, bpt, b0 + ty + ry, N, skipB, liveB);
        q_chunk_load<S, B, QMV_ROWS>(m, size_t(nB), QMV_ROWS - 1, c, wb, sb, bb);
        qmv_pipe_block<B>(wa, sa, ba, xs, cs, c, on, nA, skipA, liveA, outr, part, lane, sg);
        if (b0 + ty >= bpt) {
            break;  // uniform
        }
        nA = qmv_pipe_first(tg, bpt, b0 + 2 * ty + ry, N, skipA, liveA);
        q_chunk_load<S, B, QMV_ROWS>(m, size_t(nA), QMV_ROWS - 1, c, wa, sa, ba);
        qmv_pipe_block<B>(wb, sb, bb, xs, cs, c, on, nB, skipB, liveB, outr, part, lane, sg);
    }
}

// qmv's threadgroup is (tx, ty) threads: ty row slots, whose tx threads (tx / 32
// simdgroups) share a row block of QMV_ROWS rows: thread t of a slot takes chunks
// (staged path) or units t, t + tx, ... of each row. The row blocks are split evenly
// among the ntg threadgroups; slot y takes blocks y, y + ty, ... of its threadgroup's.
template <typename S, int B, bool STAGED, bool PIPE = false>
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
        if (PIPE) {  // the qmv_pipe entries: 4-bit rows of at most QMV_PIPE_K codes, tx = 32
            qmv_pipe<S, B>(m, p.N, p.K, out + size_t(i) * size_t(p.N), xs, cs, part, int(tg), bpt, int(ty),
                           int(ry), lane, sg);
        }
        // The same trip count for every thread (q_rows_reduce may hold barriers).
        for (int b0 = 0; b0 < (PIPE ? 0 : bpt); b0 += int(ty)) {
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

// qmv_pipe_impl is the pipelined staged path (4-bit rows of at most QMV_PIPE_K codes; its
// own entries, for its registers).
template <typename S>
inline void qmv_pipe_impl(const device float* x, const device uchar* w, const device S* s,
                          const device S* b, device float* out, constant QuantParams& p,
                          threadgroup float* part, threadgroup float* xs, threadgroup float* cs, uint tg, uint ntg,
                          uint tid, uint lane, uint sg, uint tx, uint ty) {
    qmv_rows<S, 4, true, true>(x, w, s, b, out, p, part, xs, cs, tg, ntg, tid, lane, sg, tx, ty);
}

template <typename S>
inline void qmm_impl(const device float* x, const device uchar* w, const device S* s,
                     const device S* b, device float* out, constant QuantParams& p, uint2 gid) {
    int n = int(gid.x), i = int(gid.y);
    if (n >= p.N || i >= p.M) return;
    QMat<S> m = {w, s, b, p.K, p.bits, p.group};
    out[i * p.N + n] = m.dot(x + i * p.K, n);
}

// The tiled qmm (the qmm_gemm4 and qmm_gemm8 entries, many x rows): gemm.metal's tiles
// (4 x 4 and 8 x 8 a thread), the w rows loaded by GemmQRows. GemmQRows stages a
// quantized matrix's rows, BK codes a step: a thread loads one unit of 8 codes a step
// (GEMM_BN(TN) rows of GEMM_BK(TN) codes are GEMM_THREADS units; K is a multiple of the
// group, 32 or more, so of BK) with its group's scale and bias, and stages s * q + b, each
// code dequantized once a tile for the tile's x rows. Rows past the last read the last
// (their outputs are not written).
template <typename S, int BK>
struct GemmQRows {
    QMat<S> m;
    int rows;

    struct Regs {
        ulong v;
        float s;
        float b;
    };

    void load(int r0, int k0, uint tid, thread Regs& g) const {
        int r = min(r0 + int(tid) / (BK / 8), rows - 1);
        int u = k0 / 8 + int(tid) % (BK / 8);
        const device uchar* row = m.w + size_t(r) * size_t(m.row_bytes());
        switch (m.bits) {  // uniform
        case 2: g.v = q_unit<2>(row, u); break;
        case 4: g.v = q_unit<4>(row, u); break;
        case 8: g.v = q_unit<8>(row, u); break;
        default: g.v = q8(row + size_t(u) * size_t(m.bits), m.bits); break;
        }
        size_t gi = size_t(r) * size_t(m.groups()) + size_t(u * 8 / m.group);
        g.s = float(m.s[gi]);
        g.b = float(m.b[gi]);
    }

    void store(thread const Regs& g, threadgroup float* s, int ld, uint tid) const {
        int n = int(tid) / (BK / 8);
        int k = int(tid) % (BK / 8) * 8;
        ulong mask = (ulong(1) << m.bits) - 1;
        for (int j = 0; j < 8; j++) {
            s[(k + j) * ld + n] = fma(g.s, q_float(uint((g.v >> (j * m.bits)) & mask)), g.b);
        }
    }
};

template <int TM, int TN, typename S>
inline void qmm_gemm_impl(const device float* x, const device uchar* w, const device S* s, const device S* b,
                          device float* out, constant QuantParams& p, threadgroup float* As, threadgroup float* Bs,
                          uint3 tg, uint tid) {
    const int BK = GEMM_BK(TN);
    QMat<S> m = {w, s, b, p.K, p.bits, p.group};
    GemmRows<float, GEMM_BM(TM) * BK / GEMM_THREADS, BK> la = {x, p.M, p.K};
    GemmQRows<S, BK> lb = {m, p.N};
    gemm_run<TM, TN>(la, lb, out, p.M, p.N, p.K, As, Bs, tg, tid);
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

kernel void qmv_pipe_float32(const device float* x [[buffer(0)]], const device uchar* w [[buffer(1)]],
                        const device float* s [[buffer(2)]], const device float* b [[buffer(3)]],
                        device float* out [[buffer(4)]], constant QuantParams& p [[buffer(5)]],
                        uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                        uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                        uint3 tpg [[threads_per_threadgroup]], uint3 ntg [[threadgroups_per_grid]]) {
    threadgroup float part[QMV_MAXSG * QMV_ROWS];
    threadgroup float xs[QMV_XMAX / 32 * QMV_XPAD] __attribute__((aligned(16)));  // read as float4s
    threadgroup float cs[QMV_XMAX / 32];
    qmv_pipe_impl<float>(x, w, s, b, out, p, part, xs, cs, tg.x, ntg.x, tid, lane, sg, tpg.x, tpg.y);
}

kernel void qmm_float32(const device float* x [[buffer(0)]], const device uchar* w [[buffer(1)]],
                       const device float* s [[buffer(2)]], const device float* b [[buffer(3)]],
                       device float* out [[buffer(4)]], constant QuantParams& p [[buffer(5)]],
                       uint2 gid [[thread_position_in_grid]]) {
    qmm_impl<float>(x, w, s, b, out, p, gid);
}

kernel void qmm_gemm4_float32(const device float* x [[buffer(0)]], const device uchar* w [[buffer(1)]],
                             const device float* s [[buffer(2)]], const device float* b [[buffer(3)]],
                             device float* out [[buffer(4)]], constant QuantParams& p [[buffer(5)]],
                             uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]]) {
    threadgroup float As[GEMM_AS(4, 4)] __attribute__((aligned(16)));  // read as float4s
    threadgroup float Bs[GEMM_BS(4)] __attribute__((aligned(16)));
    qmm_gemm_impl<4, 4, float>(x, w, s, b, out, p, As, Bs, tg, tid);
}

kernel void qmm_gemm8_float32(const device float* x [[buffer(0)]], const device uchar* w [[buffer(1)]],
                             const device float* s [[buffer(2)]], const device float* b [[buffer(3)]],
                             device float* out [[buffer(4)]], constant QuantParams& p [[buffer(5)]],
                             uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]]) {
    threadgroup float As[GEMM_AS(8, 8)] __attribute__((aligned(16)));  // read as float4s
    threadgroup float Bs[GEMM_BS(8)] __attribute__((aligned(16)));
    qmm_gemm_impl<8, 8, float>(x, w, s, b, out, p, As, Bs, tg, tid);
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

kernel void qmv_pipe_float16(const device float* x [[buffer(0)]], const device uchar* w [[buffer(1)]],
                        const device half* s [[buffer(2)]], const device half* b [[buffer(3)]],
                        device float* out [[buffer(4)]], constant QuantParams& p [[buffer(5)]],
                        uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                        uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                        uint3 tpg [[threads_per_threadgroup]], uint3 ntg [[threadgroups_per_grid]]) {
    threadgroup float part[QMV_MAXSG * QMV_ROWS];
    threadgroup float xs[QMV_XMAX / 32 * QMV_XPAD] __attribute__((aligned(16)));  // read as float4s
    threadgroup float cs[QMV_XMAX / 32];
    qmv_pipe_impl<half>(x, w, s, b, out, p, part, xs, cs, tg.x, ntg.x, tid, lane, sg, tpg.x, tpg.y);
}

kernel void qmm_float16(const device float* x [[buffer(0)]], const device uchar* w [[buffer(1)]],
                       const device half* s [[buffer(2)]], const device half* b [[buffer(3)]],
                       device float* out [[buffer(4)]], constant QuantParams& p [[buffer(5)]],
                       uint2 gid [[thread_position_in_grid]]) {
    qmm_impl<half>(x, w, s, b, out, p, gid);
}

kernel void qmm_gemm4_float16(const device float* x [[buffer(0)]], const device uchar* w [[buffer(1)]],
                             const device half* s [[buffer(2)]], const device half* b [[buffer(3)]],
                             device float* out [[buffer(4)]], constant QuantParams& p [[buffer(5)]],
                             uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]]) {
    threadgroup float As[GEMM_AS(4, 4)] __attribute__((aligned(16)));  // read as float4s
    threadgroup float Bs[GEMM_BS(4)] __attribute__((aligned(16)));
    qmm_gemm_impl<4, 4, half>(x, w, s, b, out, p, As, Bs, tg, tid);
}

kernel void qmm_gemm8_float16(const device float* x [[buffer(0)]], const device uchar* w [[buffer(1)]],
                             const device half* s [[buffer(2)]], const device half* b [[buffer(3)]],
                             device float* out [[buffer(4)]], constant QuantParams& p [[buffer(5)]],
                             uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]]) {
    threadgroup float As[GEMM_AS(8, 8)] __attribute__((aligned(16)));  // read as float4s
    threadgroup float Bs[GEMM_BS(8)] __attribute__((aligned(16)));
    qmm_gemm_impl<8, 8, half>(x, w, s, b, out, p, As, Bs, tg, tid);
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

kernel void qmv_pipe_bfloat16(const device float* x [[buffer(0)]], const device uchar* w [[buffer(1)]],
                        const device bfloat* s [[buffer(2)]], const device bfloat* b [[buffer(3)]],
                        device float* out [[buffer(4)]], constant QuantParams& p [[buffer(5)]],
                        uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                        uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                        uint3 tpg [[threads_per_threadgroup]], uint3 ntg [[threadgroups_per_grid]]) {
    threadgroup float part[QMV_MAXSG * QMV_ROWS];
    threadgroup float xs[QMV_XMAX / 32 * QMV_XPAD] __attribute__((aligned(16)));  // read as float4s
    threadgroup float cs[QMV_XMAX / 32];
    qmv_pipe_impl<bfloat>(x, w, s, b, out, p, part, xs, cs, tg.x, ntg.x, tid, lane, sg, tpg.x, tpg.y);
}

kernel void qmm_bfloat16(const device float* x [[buffer(0)]], const device uchar* w [[buffer(1)]],
                       const device bfloat* s [[buffer(2)]], const device bfloat* b [[buffer(3)]],
                       device float* out [[buffer(4)]], constant QuantParams& p [[buffer(5)]],
                       uint2 gid [[thread_position_in_grid]]) {
    qmm_impl<bfloat>(x, w, s, b, out, p, gid);
}

kernel void qmm_gemm4_bfloat16(const device float* x [[buffer(0)]], const device uchar* w [[buffer(1)]],
                             const device bfloat* s [[buffer(2)]], const device bfloat* b [[buffer(3)]],
                             device float* out [[buffer(4)]], constant QuantParams& p [[buffer(5)]],
                             uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]]) {
    threadgroup float As[GEMM_AS(4, 4)] __attribute__((aligned(16)));  // read as float4s
    threadgroup float Bs[GEMM_BS(4)] __attribute__((aligned(16)));
    qmm_gemm_impl<4, 4, bfloat>(x, w, s, b, out, p, As, Bs, tg, tid);
}

kernel void qmm_gemm8_bfloat16(const device float* x [[buffer(0)]], const device uchar* w [[buffer(1)]],
                             const device bfloat* s [[buffer(2)]], const device bfloat* b [[buffer(3)]],
                             device float* out [[buffer(4)]], constant QuantParams& p [[buffer(5)]],
                             uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]]) {
    threadgroup float As[GEMM_AS(8, 8)] __attribute__((aligned(16)));  // read as float4s
    threadgroup float Bs[GEMM_BS(8)] __attribute__((aligned(16)));
    qmm_gemm_impl<8, 8, bfloat>(x, w, s, b, out, p, As, Bs, tg, tid);
}

kernel void qembed_bfloat16(const device int* ids [[buffer(0)]], const device uchar* w [[buffer(1)]],
                          const device bfloat* s [[buffer(2)]], const device bfloat* b [[buffer(3)]],
                          device float* out [[buffer(4)]], constant QEmbedParams& p [[buffer(5)]],
                          device atomic_uint* err [[buffer(6)]], constant uint& tag [[buffer(7)]],
                          uint2 gid [[thread_position_in_grid]]) {
    qembed_impl<bfloat>(ids, w, s, b, out, p, err, tag, gid);
}
