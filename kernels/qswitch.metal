// qswitch family: a MoE layer's routed experts on quantized weights (MLX's
// SwitchGLU over gather_qmm), with the rows, units and chunks of quant_rows.metal.
#include "quant_rows.metal"

// qswitch_glu, in two passes over the launch's scratch act [T, k, I]:
// qswitch_act: a threadgroup (as qmv's, one row block) computes QMV_ROWS rows i of one
// routed expert e of token t: act = silu(gate_e[i] . x_t) * (up_e[i] . x_t), the x
// chunks or units shared by the gate and up rows; grid (I / QMV_ROWS, T * k).
// qswitch_down: a threadgroup computes QMV_ROWS outputs h of token t, the sum over the
// experts j of score_j * (down_e[h] . act_j); its threads share the (expert, chunk or
// unit) pairs; grid (H / QMV_ROWS, T). Each weight is read once per token, as the Go
// twin does; the sums are the Go twin's in another order (within the catalog's
// tolerance). The _chunks entries (2-, 4- and 8-bit rows; Encode picks them) take
// 32-code chunks as the staged qmv does (one scale and bias a chunk, a code an and, a
// subtraction and an fma): act stages x in threadgroup memory for several simdgroups
// of a few rows each (below); down loads each thread's act chunk from the scratch as
// float4s and scales it in registers (q_chunk_xd). A chunk read by 32 scalar loads a
// lane, lanes 128 bytes apart, cost more than the arithmetic: act with x read so took
// 29.8 us at 2 rows a simdgroup, 13.4 staged (docs/h200/run13-exp1.log, exp2.log). The
// other entries take units of 8 codes (every width, widths known at run time).

// q_chunk_xd loads chunk c (32 values) of the row xr into xc, staged as q_stage_x
// stages it (value j times 2^-(B * (j mod 16/B))), and returns the chunk's sum.
template <int B>
inline float q_chunk_xd(const device float* xr, int c, thread float* xc) {
    float s[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    const device float4* x4 = (const device float4*)(xr + c * 32);  // xr 16-byte aligned (the scratch)
    for (int q = 0; q < 8; q++) {
        float4 v = x4[q];
        xc[4 * q] = v.x;
        xc[4 * q + 1] = v.y;
        xc[4 * q + 2] = v.z;
        xc[4 * q + 3] = v.w;
    }
    for (int j = 0; j < 32; j++) {
        float v = xc[j];
        s[j & 3] += v;
        xc[j] = v * as_type<float>(uint(127 - B * (j % (16 / B))) << 23);
    }
    return (s[0] + s[1]) + (s[2] + s[3]);
}

// qswitch_act_loop adds thread tid's units of the gate and up rows n0 + r to ga and
// ua: both of width B, or B = 0 for widths known at run time.
template <typename S, int B>
inline void qswitch_act_loop(const device float* xr, QMat<S> gate, QMat<S> up, size_t n0, int last,
                             int units, uint tid, uint nthr, thread float* ga, thread float* ua) {
    for (int c = int(tid); c < units; c += int(nthr)) {
        float xv[8];
        float xs = q_load8(xr, c, xv);
        if (B == 0) {
            q_rows_unit_rt(gate, n0, last, c, xv, xs, 1.0f, ga);
            q_rows_unit_rt(up, n0, last, c, xv, xs, 1.0f, ua);
        } else {
            q_rows_unit<S, B>(gate, n0, last, c, xv, xs, 1.0f, ga);
            q_rows_unit<S, B>(up, n0, last, c, xv, xs, 1.0f, ua);
        }
    }
}

// qswitch_down_loop adds thread tid's (expert, unit) pairs of the down rows of token t
// to acc, for down rows of width B.
template <typename S, int B>
inline void qswitch_down_loop(QMat<S> down, const device int* idx, const device float* scores,
                              const device float* act, constant QSwitchGLUParams& p, int t, int h0,
                              int last, uint tid, uint nthr, thread float* acc) {
    int K = p.K;  // the sizes in registers, read from the constant buffer once
    int I = p.I;
    int E = p.E;
    int H = p.H;
    int units = I / 8;
    for (int it = int(tid); it < K * units; it += int(nthr)) {
        int j = it / units;
        int c = it % units;
        int e = q_index(idx[t * K + j], E);
        if (e < 0) {
            continue;
        }
        float sc = scores[t * K + j];
        float xv[8];
        float xs = q_load8(act + (size_t(t) * size_t(K) + size_t(j)) * size_t(I), c, xv);
        q_rows_unit<S, B>(down, size_t(e) * size_t(H) + size_t(h0), last, c, xv, xs, sc, acc);
    }
}

// The _chunks act pass: a threadgroup of nsg simdgroups takes nsg * QSW_RS rows of one
// routed expert (Encode's qswitchSGs and qswitchSGRows), each simdgroup QSW_RS of them,
// gate and up; the threadgroup stages x once in threadgroup memory as the staged qmv
// does (coalesced loads; Encode takes this entry for H <= QMV_XMAX), then lanes take
// chunks lane, lane + 32, ..., QSW_CH chunks' weights in flight a lane, and the simdgroup
// adds its rows with simd_sum. The staging takes no chunk sums (a simd_sum a staged
// value, on the way to the first weight load): each lane sums its chunk from the staged
// values (q_chunk_xsum; the act launch alone at k = 10 12.8 us against 14.4,
// docs/h200/run14-exp3.log; 11.5 with x read as float4s, run14-exp4.log). An expert
// out of range reads expert 0's rows and writes zeros (its weights are loaded with no
// branch on the routed index).
#define QSW_RS 2
#define QSW_CH 1

// qswitch_act_chunks adds lane's chunks of the gate and up rows n0 + r, r < QSW_RS (rows
// past last repeat row n0 + last), to ga and ua: both of width B, x staged in xs and cs.
template <typename S, int B>
inline void qswitch_act_chunks(threadgroup const float* xs, threadgroup const float* cs, QMat<S> gate,
                               QMat<S> up, size_t n0, int last, uint lane, thread float* ga, thread float* ua) {
    int nch = gate.cols / 32;
    for (int c0 = int(lane); c0 < nch; c0 += 32 * QSW_CH) {
        uint gw[QSW_CH * QSW_RS * B];
        uint uw[QSW_CH * QSW_RS * B];
        float gsc[QSW_CH * QSW_RS], gbi[QSW_CH * QSW_RS], usc[QSW_CH * QSW_RS], ubi[QSW_CH * QSW_RS];
        for (int k = 0; k < QSW_CH; k++) {
            int c = min(c0 + 32 * k, nch - 1);  // a chunk past the row repeats the last, times 0
            int o = k * QSW_RS;
            q_chunk_load<S, B, QSW_RS>(gate, n0, last, c, gw + o * B, gsc + o, gbi + o);
            q_chunk_load<S, B, QSW_RS>(up, n0, last, c, uw + o * B, usc + o, ubi + o);
        }
        for (int k = 0; k < QSW_CH; k++) {
            int c = min(c0 + 32 * k, nch - 1);
            float f = c0 + 32 * k < nch ? 1.0f : 0.0f;
            int o = k * QSW_RS;
            float xc[32];
            float xsum = q_chunk_xsum<B>(xs, c, xc);
            q_chunk_add<B, QSW_RS>(gw + o * B, gsc + o, gbi + o, xc, xsum, f, ga);
            q_chunk_add<B, QSW_RS>(uw + o * B, usc + o, ubi + o, xc, xsum, f, ua);
        }
    }
}

// qswitch_act_chunks_impl: simdgroup sg of threadgroup (x, tj) computes the act rows
// (x * nsg + sg) * QSW_RS + r, r < QSW_RS, of routed expert tj = t * K + j.
template <typename S>
inline void qswitch_act_chunks_impl(const device float* x, QMat<S> gate, QMat<S> up, const device int* idx,
                                    device float* act, constant QSwitchGLUParams& p, threadgroup float* xs,
                                    threadgroup float* cs, uint3 tg, uint tid, uint lane, uint sg, uint nthr) {
    int tj = int(tg.y);  // t * K + j
    if (tj >= p.T * p.K) {
        return;  // an empty launch still dispatches one group; uniform, before any barrier
    }
    int e = q_index(idx[tj], p.E);  // its load is in flight while x is staged
    const device float* xr = x + size_t(tj / p.K) * size_t(p.H);
    switch (gate.bits) {  // Encode picks the chunks entry for gate and up of one width 2, 4 or 8
    case 2: q_stage_x<2, false>(xr, p.H, xs, cs, tid, lane, nthr); break;
    case 4: q_stage_x<4, false>(xr, p.H, xs, cs, tid, lane, nthr); break;
    default: q_stage_x<8, false>(xr, p.H, xs, cs, tid, lane, nthr); break;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    int i0 = (int(tg.x) * int(nthr / 32) + int(sg)) * QSW_RS;
    int rows = min(QSW_RS, p.I - i0);
    if (rows <= 0) {
        return;  // uniform in the simdgroup; no barrier follows
    }
    float ga[QSW_RS];
    float ua[QSW_RS];
    for (int r = 0; r < QSW_RS; r++) {
        ga[r] = 0.0f;
        ua[r] = 0.0f;
    }
    size_t n0 = size_t(max(e, 0)) * size_t(p.I) + size_t(i0);
    switch (gate.bits) {
    case 2: qswitch_act_chunks<S, 2>(xs, cs, gate, up, n0, rows - 1, lane, ga, ua); break;
    case 4: qswitch_act_chunks<S, 4>(xs, cs, gate, up, n0, rows - 1, lane, ga, ua); break;
    default: qswitch_act_chunks<S, 8>(xs, cs, gate, up, n0, rows - 1, lane, ga, ua); break;
    }
    for (int r = 0; r < QSW_RS; r++) {
        float g = simd_sum(ga[r]);
        float u = simd_sum(ua[r]);
        if (int(lane) == r && r < rows) {
            // An expert out of range contributes nothing (down skips it).
            act[size_t(tj) * size_t(p.I) + size_t(i0 + r)] = e < 0 ? 0.0f : (g / (1.0f + exp(-g))) * u;
        }
    }
}

// qswitch_down_chunks is qswitch_down_loop by (expert, chunk) pairs, QSW_DR down rows a
// threadgroup (Encode's qswitchDownRows). 8 on the H200 translation: the down launch
// alone 9.7 us against 11.6 at 4 rows (more, shorter warps, each reading its act chunk
// again), 13.9 at 2 and 13.1 at 16 (docs/h200/run16-exp1.log, run16-exp3.log).
#define QSW_DR 8
#define QSW_ACC (QSW_DR > QMV_ROWS ? QSW_DR : QMV_ROWS)  // a down thread's sums (QSW_DR a multiple of QMV_ROWS, or less)
template <typename S, int B>
inline void qswitch_down_chunks(QMat<S> down, const device int* idx, const device float* scores,
                                const device float* act, constant QSwitchGLUParams& p, int t, int h0,
                                int last, uint tid, uint nthr, thread float* acc) {
    int K = p.K;  // the sizes in registers, read from the constant buffer once
    int I = p.I;
    int E = p.E;
    int H = p.H;
    int chunks = I / 32;
    for (int it = int(tid); it < K * chunks; it += int(nthr)) {
        int j = it / chunks;
        int c = it % chunks;
        // The act chunk and the score are loaded while the routed index is (no branch on
        // it before the loads); an expert out of range reads expert 0's rows, adds nothing.
        float sc = scores[t * K + j];
        float xc[32];
        float xs = q_chunk_xd<B>(act + (size_t(t) * size_t(K) + size_t(j)) * size_t(I), c, xc);
        int e = q_index(idx[t * K + j], E);
        uint wd[QSW_DR * B];
        float ws[QSW_DR];
        float wb[QSW_DR];
        q_chunk_load<S, B, QSW_DR>(down, size_t(max(e, 0)) * size_t(H) + size_t(h0), last, c, wd, ws, wb);
        float d[QSW_DR];
        for (int r = 0; r < QSW_DR; r++) {
            d[r] = 0.0f;
        }
        q_chunk_add<B, QSW_DR>(wd, ws, wb, xc, xs, sc, d);
        for (int r = 0; r < QSW_DR; r++) {
            acc[r] += e < 0 ? 0.0f : d[r];
        }
    }
}

template <typename S>
inline void qswitch_act_impl(const device float* x, QMat<S> gate, QMat<S> up, const device int* idx,
                             device float* act, constant QSwitchGLUParams& p, threadgroup float* part,
                             uint3 tg, uint tid, uint lane, uint sg, uint nthr) {
    int i0 = int(tg.x) * QMV_ROWS;
    int tj = int(tg.y);  // t * K + j
    if (tj >= p.T * p.K) {
        return;  // an empty launch still dispatches one group; uniform, before any barrier
    }
    int rows = min(QMV_ROWS, p.I - i0);
    if (rows <= 0) {
        return;
    }
    int e = q_index(idx[tj], p.E);
    const device float* xr = x + size_t(tj / p.K) * size_t(p.H);
    float ga[QMV_ROWS];
    float ua[QMV_ROWS];
    for (int r = 0; r < QMV_ROWS; r++) {
        ga[r] = 0.0f;
        ua[r] = 0.0f;
    }
    if (e >= 0) {  // uniform: an expert out of range contributes nothing (down skips it)
        size_t n0 = size_t(e) * size_t(p.I) + size_t(i0);
        // One width for both (the usual case) takes the loop compiled for it.
        switch (gate.bits == up.bits ? gate.bits : 0) {
        case 2: qswitch_act_loop<S, 2>(xr, gate, up, n0, rows - 1, p.H / 8, tid, nthr, ga, ua); break;
        case 3: qswitch_act_loop<S, 3>(xr, gate, up, n0, rows - 1, p.H / 8, tid, nthr, ga, ua); break;
        case 4: qswitch_act_loop<S, 4>(xr, gate, up, n0, rows - 1, p.H / 8, tid, nthr, ga, ua); break;
        case 5: qswitch_act_loop<S, 5>(xr, gate, up, n0, rows - 1, p.H / 8, tid, nthr, ga, ua); break;
        case 6: qswitch_act_loop<S, 6>(xr, gate, up, n0, rows - 1, p.H / 8, tid, nthr, ga, ua); break;
        case 8: qswitch_act_loop<S, 8>(xr, gate, up, n0, rows - 1, p.H / 8, tid, nthr, ga, ua); break;
        default: qswitch_act_loop<S, 0>(xr, gate, up, n0, rows - 1, p.H / 8, tid, nthr, ga, ua); break;
        }
    }
    int row;
    float g = q_rows_reduce(ga, part, rows, tid, lane, sg, 0, nthr / 32, row);
    float u = q_rows_reduce(ua, part, rows, tid, lane, sg, 0, nthr / 32, row);
    if (row >= 0) {
        act[size_t(tj) * size_t(p.I) + size_t(i0 + row)] = (g / (1.0f + exp(-g))) * u;
    }
}

template <typename S, bool CHUNKS>
inline void qswitch_down_impl(QMat<S> down, const device int* idx, const device float* scores,
                              const device float* act, device float* out, constant QSwitchGLUParams& p,
                              threadgroup float* part, uint3 tg, uint tid, uint lane, uint sg, uint nthr) {
    int R = CHUNKS ? QSW_DR : QMV_ROWS;  // down rows a threadgroup
    int h0 = int(tg.x) * R;
    int t = int(tg.y);
    if (t >= p.T) {
        return;  // as in qswitch_act
    }
    int rows = min(R, p.H - h0);
    if (rows <= 0) {
        return;
    }
    float acc[QSW_ACC];
    for (int r = 0; r < QSW_ACC; r++) {
        acc[r] = 0.0f;
    }
    if (CHUNKS) {  // Encode picks the chunks entry for down rows of 2, 4 or 8 bits
        switch (down.bits) {
        case 2: qswitch_down_chunks<S, 2>(down, idx, scores, act, p, t, h0, rows - 1, tid, nthr, acc); break;
        case 4: qswitch_down_chunks<S, 4>(down, idx, scores, act, p, t, h0, rows - 1, tid, nthr, acc); break;
        default: qswitch_down_chunks<S, 8>(down, idx, scores, act, p, t, h0, rows - 1, tid, nthr, acc); break;
        }
    } else {
        switch (down.bits) {
        case 2: qswitch_down_loop<S, 2>(down, idx, scores, act, p, t, h0, rows - 1, tid, nthr, acc); break;
        case 3: qswitch_down_loop<S, 3>(down, idx, scores, act, p, t, h0, rows - 1, tid, nthr, acc); break;
        case 4: qswitch_down_loop<S, 4>(down, idx, scores, act, p, t, h0, rows - 1, tid, nthr, acc); break;
        case 5: qswitch_down_loop<S, 5>(down, idx, scores, act, p, t, h0, rows - 1, tid, nthr, acc); break;
        case 6: qswitch_down_loop<S, 6>(down, idx, scores, act, p, t, h0, rows - 1, tid, nthr, acc); break;
        default: qswitch_down_loop<S, 8>(down, idx, scores, act, p, t, h0, rows - 1, tid, nthr, acc); break;
        }
    }
    // QMV_ROWS rows at a time (q_rows_reduce's width); rows is uniform, so every thread
    // reaches the same barriers.
    for (int g = 0; g < QSW_ACC && g < rows; g += QMV_ROWS) {
        int row;
        float y = q_rows_reduce(acc + g, part, min(QMV_ROWS, rows - g), tid, lane, sg, 0, nthr / 32, row);
        if (row >= 0) {
            out[size_t(t) * size_t(p.H) + size_t(h0 + g + row)] = y;
        }
    }
}

// Entries: one per kernel and scale type (the emulation harness and Metal's library
// both find kernels by their written names, so they are spelled out).

kernel void qswitch_act_float32(const device float* x [[buffer(0)]],
                               const device uchar* gw [[buffer(1)]], const device float* gs [[buffer(2)]],
                               const device float* gb [[buffer(3)]], const device uchar* uw [[buffer(4)]],
                               const device float* us [[buffer(5)]], const device float* ub [[buffer(6)]],
                               const device int* idx [[buffer(10)]],
                               constant QSwitchGLUParams& p [[buffer(13)]], device float* act [[buffer(14)]],
                               uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                               uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                       uint3 tpg [[threads_per_threadgroup]]) {
    threadgroup float part[QMV_MAXSG * QMV_ROWS];
    QMat<float> gate = {gw, gs, gb, p.H, p.gate_bits, p.gate_group};
    QMat<float> up = {uw, us, ub, p.H, p.up_bits, p.up_group};
    qswitch_act_impl<float>(x, gate, up, idx, act, p, part, tg, tid, lane, sg, tpg.x);
}

kernel void qswitch_act_chunks_float32(const device float* x [[buffer(0)]],
                               const device uchar* gw [[buffer(1)]], const device float* gs [[buffer(2)]],
                               const device float* gb [[buffer(3)]], const device uchar* uw [[buffer(4)]],
                               const device float* us [[buffer(5)]], const device float* ub [[buffer(6)]],
                               const device int* idx [[buffer(10)]],
                               constant QSwitchGLUParams& p [[buffer(13)]], device float* act [[buffer(14)]],
                               uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                               uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                       uint3 tpg [[threads_per_threadgroup]]) {
    threadgroup float xs[QMV_XMAX / 32 * QMV_XPAD] __attribute__((aligned(16)));  // read as float4s
    threadgroup float cs[QMV_XMAX / 32];
    QMat<float> gate = {gw, gs, gb, p.H, p.gate_bits, p.gate_group};
    QMat<float> up = {uw, us, ub, p.H, p.up_bits, p.up_group};
    qswitch_act_chunks_impl<float>(x, gate, up, idx, act, p, xs, cs, tg, tid, lane, sg, tpg.x);
}

kernel void qswitch_down_float32(const device uchar* dw [[buffer(7)]], const device float* ds [[buffer(8)]],
                               const device float* db [[buffer(9)]], const device int* idx [[buffer(10)]],
                               const device float* scores [[buffer(11)]], device float* out [[buffer(12)]],
                               constant QSwitchGLUParams& p [[buffer(13)]], const device float* act [[buffer(14)]],
                               uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                               uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                       uint3 tpg [[threads_per_threadgroup]]) {
    threadgroup float part[QMV_MAXSG * QMV_ROWS];
    QMat<float> down = {dw, ds, db, p.I, p.down_bits, p.down_group};
    qswitch_down_impl<float, false>(down, idx, scores, act, out, p, part, tg, tid, lane, sg, tpg.x);
}

kernel void qswitch_down_chunks_float32(const device uchar* dw [[buffer(7)]], const device float* ds [[buffer(8)]],
                               const device float* db [[buffer(9)]], const device int* idx [[buffer(10)]],
                               const device float* scores [[buffer(11)]], device float* out [[buffer(12)]],
                               constant QSwitchGLUParams& p [[buffer(13)]], const device float* act [[buffer(14)]],
                               uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                               uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                       uint3 tpg [[threads_per_threadgroup]]) {
    threadgroup float part[QMV_MAXSG * QMV_ROWS];
    QMat<float> down = {dw, ds, db, p.I, p.down_bits, p.down_group};
    qswitch_down_impl<float, true>(down, idx, scores, act, out, p, part, tg, tid, lane, sg, tpg.x);
}

kernel void qswitch_act_float16(const device float* x [[buffer(0)]],
                               const device uchar* gw [[buffer(1)]], const device half* gs [[buffer(2)]],
                               const device half* gb [[buffer(3)]], const device uchar* uw [[buffer(4)]],
                               const device half* us [[buffer(5)]], const device half* ub [[buffer(6)]],
                               const device int* idx [[buffer(10)]],
                               constant QSwitchGLUParams& p [[buffer(13)]], device float* act [[buffer(14)]],
                               uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                               uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                       uint3 tpg [[threads_per_threadgroup]]) {
    threadgroup float part[QMV_MAXSG * QMV_ROWS];
    QMat<half> gate = {gw, gs, gb, p.H, p.gate_bits, p.gate_group};
    QMat<half> up = {uw, us, ub, p.H, p.up_bits, p.up_group};
    qswitch_act_impl<half>(x, gate, up, idx, act, p, part, tg, tid, lane, sg, tpg.x);
}

kernel void qswitch_act_chunks_float16(const device float* x [[buffer(0)]],
                               const device uchar* gw [[buffer(1)]], const device half* gs [[buffer(2)]],
                               const device half* gb [[buffer(3)]], const device uchar* uw [[buffer(4)]],
                               const device half* us [[buffer(5)]], const device half* ub [[buffer(6)]],
                               const device int* idx [[buffer(10)]],
                               constant QSwitchGLUParams& p [[buffer(13)]], device float* act [[buffer(14)]],
                               uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                               uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                       uint3 tpg [[threads_per_threadgroup]]) {
    threadgroup float xs[QMV_XMAX / 32 * QMV_XPAD] __attribute__((aligned(16)));  // read as float4s
    threadgroup float cs[QMV_XMAX / 32];
    QMat<half> gate = {gw, gs, gb, p.H, p.gate_bits, p.gate_group};
    QMat<half> up = {uw, us, ub, p.H, p.up_bits, p.up_group};
    qswitch_act_chunks_impl<half>(x, gate, up, idx, act, p, xs, cs, tg, tid, lane, sg, tpg.x);
}

kernel void qswitch_down_float16(const device uchar* dw [[buffer(7)]], const device half* ds [[buffer(8)]],
                               const device half* db [[buffer(9)]], const device int* idx [[buffer(10)]],
                               const device float* scores [[buffer(11)]], device float* out [[buffer(12)]],
                               constant QSwitchGLUParams& p [[buffer(13)]], const device float* act [[buffer(14)]],
                               uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                               uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                       uint3 tpg [[threads_per_threadgroup]]) {
    threadgroup float part[QMV_MAXSG * QMV_ROWS];
    QMat<half> down = {dw, ds, db, p.I, p.down_bits, p.down_group};
    qswitch_down_impl<half, false>(down, idx, scores, act, out, p, part, tg, tid, lane, sg, tpg.x);
}

kernel void qswitch_down_chunks_float16(const device uchar* dw [[buffer(7)]], const device half* ds [[buffer(8)]],
                               const device half* db [[buffer(9)]], const device int* idx [[buffer(10)]],
                               const device float* scores [[buffer(11)]], device float* out [[buffer(12)]],
                               constant QSwitchGLUParams& p [[buffer(13)]], const device float* act [[buffer(14)]],
                               uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                               uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                       uint3 tpg [[threads_per_threadgroup]]) {
    threadgroup float part[QMV_MAXSG * QMV_ROWS];
    QMat<half> down = {dw, ds, db, p.I, p.down_bits, p.down_group};
    qswitch_down_impl<half, true>(down, idx, scores, act, out, p, part, tg, tid, lane, sg, tpg.x);
}

kernel void qswitch_act_bfloat16(const device float* x [[buffer(0)]],
                               const device uchar* gw [[buffer(1)]], const device bfloat* gs [[buffer(2)]],
                               const device bfloat* gb [[buffer(3)]], const device uchar* uw [[buffer(4)]],
                               const device bfloat* us [[buffer(5)]], const device bfloat* ub [[buffer(6)]],
                               const device int* idx [[buffer(10)]],
                               constant QSwitchGLUParams& p [[buffer(13)]], device float* act [[buffer(14)]],
                               uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                               uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                       uint3 tpg [[threads_per_threadgroup]]) {
    threadgroup float part[QMV_MAXSG * QMV_ROWS];
    QMat<bfloat> gate = {gw, gs, gb, p.H, p.gate_bits, p.gate_group};
    QMat<bfloat> up = {uw, us, ub, p.H, p.up_bits, p.up_group};
    qswitch_act_impl<bfloat>(x, gate, up, idx, act, p, part, tg, tid, lane, sg, tpg.x);
}

kernel void qswitch_act_chunks_bfloat16(const device float* x [[buffer(0)]],
                               const device uchar* gw [[buffer(1)]], const device bfloat* gs [[buffer(2)]],
                               const device bfloat* gb [[buffer(3)]], const device uchar* uw [[buffer(4)]],
                               const device bfloat* us [[buffer(5)]], const device bfloat* ub [[buffer(6)]],
                               const device int* idx [[buffer(10)]],
                               constant QSwitchGLUParams& p [[buffer(13)]], device float* act [[buffer(14)]],
                               uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                               uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                       uint3 tpg [[threads_per_threadgroup]]) {
    threadgroup float xs[QMV_XMAX / 32 * QMV_XPAD] __attribute__((aligned(16)));  // read as float4s
    threadgroup float cs[QMV_XMAX / 32];
    QMat<bfloat> gate = {gw, gs, gb, p.H, p.gate_bits, p.gate_group};
    QMat<bfloat> up = {uw, us, ub, p.H, p.up_bits, p.up_group};
    qswitch_act_chunks_impl<bfloat>(x, gate, up, idx, act, p, xs, cs, tg, tid, lane, sg, tpg.x);
}

kernel void qswitch_down_bfloat16(const device uchar* dw [[buffer(7)]], const device bfloat* ds [[buffer(8)]],
                               const device bfloat* db [[buffer(9)]], const device int* idx [[buffer(10)]],
                               const device float* scores [[buffer(11)]], device float* out [[buffer(12)]],
                               constant QSwitchGLUParams& p [[buffer(13)]], const device float* act [[buffer(14)]],
                               uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                               uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                       uint3 tpg [[threads_per_threadgroup]]) {
    threadgroup float part[QMV_MAXSG * QMV_ROWS];
    QMat<bfloat> down = {dw, ds, db, p.I, p.down_bits, p.down_group};
    qswitch_down_impl<bfloat, false>(down, idx, scores, act, out, p, part, tg, tid, lane, sg, tpg.x);
}

kernel void qswitch_down_chunks_bfloat16(const device uchar* dw [[buffer(7)]], const device bfloat* ds [[buffer(8)]],
                               const device bfloat* db [[buffer(9)]], const device int* idx [[buffer(10)]],
                               const device float* scores [[buffer(11)]], device float* out [[buffer(12)]],
                               constant QSwitchGLUParams& p [[buffer(13)]], const device float* act [[buffer(14)]],
                               uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                               uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]],
                       uint3 tpg [[threads_per_threadgroup]]) {
    threadgroup float part[QMV_MAXSG * QMV_ROWS];
    QMat<bfloat> down = {dw, ds, db, p.I, p.down_bits, p.down_group};
    qswitch_down_impl<bfloat, true>(down, idx, scores, act, out, p, part, tg, tid, lane, sg, tpg.x);
}
