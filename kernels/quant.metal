// quant family: affine-quantized matrices used in place (MLX's format). Packed rows are
// little-endian bit streams of b-bit codes; 8 consecutive codes fill exactly b bytes,
// so every width decodes by one rule (q8). A row's dot with x is, per group,
// scale*(x.q) + bias*sum(x), both in the Go twin's four-lane order, groups summed in
// order. Scales and biases are float, half or bfloat (one template per kernel).
#include "prelude.metal"

// q8 loads the 8 codes stored in the bits bytes at p as one little-endian integer.
inline ulong q8(const device uchar* p, int bits) {
    ulong v = 0;
    for (int i = bits - 1; i >= 0; i--) {
        v = (v << 8) | ulong(p[i]);
    }
    return v;
}

// A quantized matrix: packed rows, and [rows, groups] scales and biases of type S.
template <typename S>
struct QMat {
    const device uchar* w;
    const device S* s;
    const device S* b;
    int cols;
    int bits;
    int group;

    int groups() const { return cols / group; }
    int row_bytes() const { return cols * bits / 8; }

    // group_sum is the four-lane sum of x's group g.
    float group_sum(const device float* x, int g) const {
        float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
        for (int k = g * group; k < (g + 1) * group; k += 4) {
            s0 += x[k];
            s1 += x[k + 1];
            s2 += x[k + 2];
            s3 += x[k + 3];
        }
        return (s0 + s1) + (s2 + s3);
    }

    // dot is row r dotted with x (x in device memory).
    float dot(const device float* x, int r) const {
        const device uchar* p = w + r * row_bytes();
        ulong mask = (ulong(1) << bits) - 1;
        float acc = 0.0f;
        for (int g = 0; g < groups(); g++) {
            float l[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            for (int c = 0; c < group; c += 8) {
                int k = g * group + c;
                ulong v = q8(p + k / 8 * bits, bits);
                for (int j = 0; j < 8; j++) {
                    l[j & 3] += x[k + j] * float((v >> (j * bits)) & mask);
                }
            }
            float d = (l[0] + l[1]) + (l[2] + l[3]);
            float sc = float(s[r * groups() + g]);
            float bi = float(b[r * groups() + g]);
            acc += sc * d + bi * group_sum(x, g);
        }
        return acc;
    }

    // value dequantizes element i of row r.
    float value(int r, int i) const {
        ulong v = q8(w + r * row_bytes() + i / 8 * bits, bits);
        float q = float((v >> ((i & 7) * bits)) & ((ulong(1) << bits) - 1));
        int g = r * groups() + i / group;
        return float(s[g]) * q + float(b[g]);
    }
};

// qmv (decode): a threadgroup of QMV_THREADS threads computes QMV_ROWS output rows. The
// packed rows are cut into chunks of 8 codes (bits bytes); thread t takes chunks t,
// t + QMV_THREADS, ..., so a SIMD group reads 32 consecutive chunks of a row (contiguous
// bytes), and every row's scale and bias apply per chunk: s * (x . q) + b * sum(x). The
// thread's partial sums are added by simd_sum, then across SIMD groups in threadgroup
// memory, in a fixed order. The sums are the Go twin's, added in another order (within
// the catalog's tolerance); qmm keeps the Go twin's exact order.
#define QMV_ROWS 8
#define QMV_THREADS 128
#define QMV_SG (QMV_THREADS / 32)

// q_chunk loads the 8 codes of B bits at p (B bytes, at a multiple of B bytes from a
// 4-byte aligned row start) as one little-endian integer.
template <int B>
inline ulong q_chunk(const device uchar* p) {
    if (B == 4) {
        return ulong(*(const device uint*)p);
    }
    if (B == 8) {
        const device uint* u = (const device uint*)p;
        return ulong(u[0]) | (ulong(u[1]) << 32);
    }
    return q8(p, B);
}

template <typename S, int B>
inline void qmv_rows(const device float* x, const device uchar* w, const device S* s,
                     const device S* b, device float* out, constant QuantParams& p,
                     threadgroup float* part, uint tg, uint tid, uint lane, uint sg) {
    int n0 = int(tg) * QMV_ROWS;
    int rows = min(QMV_ROWS, p.N - n0);
    int chunks = p.K / 8;
    int groups = p.K / p.group;
    size_t row_bytes = size_t(p.K) * size_t(B) / 8;
    const ulong mask = (ulong(1) << B) - 1;
    for (int i = 0; i < p.M; i++) {
        const device float* xr = x + size_t(i) * size_t(p.K);
        float acc[QMV_ROWS];
        for (int r = 0; r < QMV_ROWS; r++) {
            acc[r] = 0.0f;
        }
        for (int c = int(tid); c < chunks; c += QMV_THREADS) {
            float xv[8];
            float xs = 0.0f;
            for (int j = 0; j < 8; j++) {
                xv[j] = xr[c * 8 + j];
                xs += xv[j];
            }
            int g = c * 8 / p.group;
            for (int r = 0; r < rows; r++) {
                size_t n = size_t(n0 + r);
                ulong v = q_chunk<B>(w + n * row_bytes + size_t(c) * B);
                float d = 0.0f;
                for (int j = 0; j < 8; j++) {
                    d += xv[j] * float((v >> (j * B)) & mask);
                }
                acc[r] += float(s[n * groups + g]) * d + float(b[n * groups + g]) * xs;
            }
        }
        for (int r = 0; r < QMV_ROWS; r++) {
            float v = simd_sum(acc[r]);
            if (lane == 0) {
                part[sg * QMV_ROWS + r] = v;
            }
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (int(tid) < rows) {
            float y = 0.0f;
            for (int g = 0; g < QMV_SG; g++) {
                y += part[g * QMV_ROWS + tid];
            }
            out[size_t(i) * size_t(p.N) + size_t(n0) + tid] = y;
        }
        // The next x row rewrites part: every thread must have read this one's first.
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
}

template <typename S>
inline void qmv_impl(const device float* x, const device uchar* w, const device S* s,
                     const device S* b, device float* out, constant QuantParams& p,
                     threadgroup float* part, uint tg, uint tid, uint lane, uint sg) {
    switch (p.bits) {
    case 2: qmv_rows<S, 2>(x, w, s, b, out, p, part, tg, tid, lane, sg); break;
    case 3: qmv_rows<S, 3>(x, w, s, b, out, p, part, tg, tid, lane, sg); break;
    case 4: qmv_rows<S, 4>(x, w, s, b, out, p, part, tg, tid, lane, sg); break;
    case 5: qmv_rows<S, 5>(x, w, s, b, out, p, part, tg, tid, lane, sg); break;
    case 6: qmv_rows<S, 6>(x, w, s, b, out, p, part, tg, tid, lane, sg); break;
    default: qmv_rows<S, 8>(x, w, s, b, out, p, part, tg, tid, lane, sg); break;
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

// q_index wraps a negative index; -1 for one out of range (the Go twin fails the
// launch for an out-of-range id; qembed's MSL twin writes zeros and reports it in the
// batch's error word, see index_fault).
inline int q_index(int i, int n) {
    if (i < 0) i += n;
    return (i >= 0 && i < n) ? i : -1;
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

// qswitch_glu, in two passes over the launch's scratch act [T, k, I]:
// qswitch_act: a threadgroup of QMV_THREADS threads computes QMV_ROWS rows i of one
// routed expert e of token t: act = silu(gate_e[i] . x_t) * (up_e[i] . x_t), the x
// chunks shared by the gate and up rows (chunks as in qmv); grid (I / 8, T * k).
// qswitch_down: a threadgroup computes QMV_ROWS outputs h of token t, sum over the
// experts j of score_j * (down_e[h] . act_j); its threads share the (expert, chunk)
// pairs; grid (H / 8, T). Each weight is read once per token, as the Go twin does; the
// sums are the Go twin's in another order (within the catalog's tolerance).

// q_chunk_rt is q_chunk for a width known at run time.
inline ulong q_chunk_rt(const device uchar* p, int bits) {
    if (bits == 4) {
        return q_chunk<4>(p);
    }
    if (bits == 8) {
        return q_chunk<8>(p);
    }
    return q8(p, bits);
}

// q_chunk_dot is chunk c (8 codes) of row n of m dotted with xv, scaled and biased:
// s * (x . q) + b * xs, where xs is the sum of xv.
template <typename S>
inline float q_chunk_dot(QMat<S> m, size_t n, int c, thread const float* xv, float xs) {
    ulong v = q_chunk_rt(m.w + n * size_t(m.row_bytes()) + size_t(c) * size_t(m.bits), m.bits);
    ulong mask = (ulong(1) << m.bits) - 1;
    float d = 0.0f;
    for (int j = 0; j < 8; j++) {
        d += xv[j] * float((v >> (j * m.bits)) & mask);
    }
    size_t g = n * size_t(m.groups()) + size_t(c * 8 / m.group);
    return float(m.s[g]) * d + float(m.b[g]) * xs;
}

// q_load8 loads 8 floats at p and returns their sum.
inline float q_load8(const device float* p, thread float* xv) {
    float xs = 0.0f;
    for (int j = 0; j < 8; j++) {
        xv[j] = p[j];
        xs += xv[j];
    }
    return xs;
}

template <typename S>
inline void qswitch_act_impl(const device float* x, QMat<S> gate, QMat<S> up, const device int* idx,
                             device float* act, constant QSwitchGLUParams& p, threadgroup float* part,
                             uint3 tg, uint tid, uint lane, uint sg) {
    int i0 = int(tg.x) * QMV_ROWS;
    int tj = int(tg.y);  // t * K + j
    if (tj >= p.T * p.K) {
        return;  // an empty launch still dispatches one group; uniform, before any barrier
    }
    int rows = min(QMV_ROWS, p.I - i0);
    int e = q_index(idx[tj], p.E);
    const device float* xr = x + size_t(tj / p.K) * size_t(p.H);
    float ga[QMV_ROWS];
    float ua[QMV_ROWS];
    for (int r = 0; r < QMV_ROWS; r++) {
        ga[r] = 0.0f;
        ua[r] = 0.0f;
    }
    if (e >= 0) {  // uniform: an expert out of range contributes nothing (down skips it)
        for (int c = int(tid); c < p.H / 8; c += QMV_THREADS) {
            float xv[8];
            float xs = q_load8(xr + c * 8, xv);
            for (int r = 0; r < rows; r++) {
                size_t n = size_t(e) * size_t(p.I) + size_t(i0 + r);
                ga[r] += q_chunk_dot(gate, n, c, xv, xs);
                ua[r] += q_chunk_dot(up, n, c, xv, xs);
            }
        }
    }
    for (int r = 0; r < QMV_ROWS; r++) {
        float g = simd_sum(ga[r]);
        float u = simd_sum(ua[r]);
        if (lane == 0) {
            part[sg * 2 * QMV_ROWS + r] = g;
            part[sg * 2 * QMV_ROWS + QMV_ROWS + r] = u;
        }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (int(tid) < rows) {
        float g = 0.0f;
        float u = 0.0f;
        for (int k = 0; k < QMV_SG; k++) {
            g += part[k * 2 * QMV_ROWS + tid];
            u += part[k * 2 * QMV_ROWS + QMV_ROWS + tid];
        }
        act[size_t(tj) * size_t(p.I) + size_t(i0) + tid] = (g / (1.0f + exp(-g))) * u;
    }
}

template <typename S>
inline void qswitch_down_impl(QMat<S> down, const device int* idx, const device float* scores,
                              const device float* act, device float* out, constant QSwitchGLUParams& p,
                              threadgroup float* part, uint3 tg, uint tid, uint lane, uint sg) {
    int h0 = int(tg.x) * QMV_ROWS;
    int t = int(tg.y);
    if (t >= p.T) {
        return;  // as in qswitch_act
    }
    int rows = min(QMV_ROWS, p.H - h0);
    int chunks = p.I / 8;
    float acc[QMV_ROWS];
    for (int r = 0; r < QMV_ROWS; r++) {
        acc[r] = 0.0f;
    }
    for (int it = int(tid); it < p.K * chunks; it += QMV_THREADS) {
        int j = it / chunks;
        int c = it % chunks;
        int e = q_index(idx[t * p.K + j], p.E);
        if (e < 0) {
            continue;
        }
        float sc = scores[t * p.K + j];
        float xv[8];
        float xs = q_load8(act + (size_t(t) * size_t(p.K) + size_t(j)) * size_t(p.I) + size_t(c * 8), xv);
        for (int r = 0; r < rows; r++) {
            acc[r] += sc * q_chunk_dot(down, size_t(e) * size_t(p.H) + size_t(h0 + r), c, xv, xs);
        }
    }
    for (int r = 0; r < QMV_ROWS; r++) {
        float v = simd_sum(acc[r]);
        if (lane == 0) {
            part[sg * QMV_ROWS + r] = v;
        }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (int(tid) < rows) {
        float y = 0.0f;
        for (int k = 0; k < QMV_SG; k++) {
            y += part[k * QMV_ROWS + tid];
        }
        out[size_t(t) * size_t(p.H) + size_t(h0) + tid] = y;
    }
}

// Entries: one per kernel and scale type (the emulation harness and Metal's library
// both find kernels by their written names, so they are spelled out).

kernel void qmv_float32(const device float* x [[buffer(0)]], const device uchar* w [[buffer(1)]],
                       const device float* s [[buffer(2)]], const device float* b [[buffer(3)]],
                       device float* out [[buffer(4)]], constant QuantParams& p [[buffer(5)]],
                       uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                       uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]]) {
    threadgroup float part[QMV_SG * QMV_ROWS];
    qmv_impl<float>(x, w, s, b, out, p, part, tg.x, tid, lane, sg);
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

kernel void qswitch_act_float32(const device float* x [[buffer(0)]],
                               const device uchar* gw [[buffer(1)]], const device float* gs [[buffer(2)]],
                               const device float* gb [[buffer(3)]], const device uchar* uw [[buffer(4)]],
                               const device float* us [[buffer(5)]], const device float* ub [[buffer(6)]],
                               const device int* idx [[buffer(10)]],
                               constant QSwitchGLUParams& p [[buffer(13)]], device float* act [[buffer(14)]],
                               uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                               uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]]) {
    threadgroup float part[QMV_SG * 2 * QMV_ROWS];
    QMat<float> gate = {gw, gs, gb, p.H, p.gate_bits, p.gate_group};
    QMat<float> up = {uw, us, ub, p.H, p.up_bits, p.up_group};
    qswitch_act_impl<float>(x, gate, up, idx, act, p, part, tg, tid, lane, sg);
}

kernel void qswitch_down_float32(const device uchar* dw [[buffer(7)]], const device float* ds [[buffer(8)]],
                               const device float* db [[buffer(9)]], const device int* idx [[buffer(10)]],
                               const device float* scores [[buffer(11)]], device float* out [[buffer(12)]],
                               constant QSwitchGLUParams& p [[buffer(13)]], const device float* act [[buffer(14)]],
                               uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                               uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]]) {
    threadgroup float part[QMV_SG * QMV_ROWS];
    QMat<float> down = {dw, ds, db, p.I, p.down_bits, p.down_group};
    qswitch_down_impl<float>(down, idx, scores, act, out, p, part, tg, tid, lane, sg);
}

kernel void qmv_float16(const device float* x [[buffer(0)]], const device uchar* w [[buffer(1)]],
                       const device half* s [[buffer(2)]], const device half* b [[buffer(3)]],
                       device float* out [[buffer(4)]], constant QuantParams& p [[buffer(5)]],
                       uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                       uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]]) {
    threadgroup float part[QMV_SG * QMV_ROWS];
    qmv_impl<half>(x, w, s, b, out, p, part, tg.x, tid, lane, sg);
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

kernel void qswitch_act_float16(const device float* x [[buffer(0)]],
                               const device uchar* gw [[buffer(1)]], const device half* gs [[buffer(2)]],
                               const device half* gb [[buffer(3)]], const device uchar* uw [[buffer(4)]],
                               const device half* us [[buffer(5)]], const device half* ub [[buffer(6)]],
                               const device int* idx [[buffer(10)]],
                               constant QSwitchGLUParams& p [[buffer(13)]], device float* act [[buffer(14)]],
                               uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                               uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]]) {
    threadgroup float part[QMV_SG * 2 * QMV_ROWS];
    QMat<half> gate = {gw, gs, gb, p.H, p.gate_bits, p.gate_group};
    QMat<half> up = {uw, us, ub, p.H, p.up_bits, p.up_group};
    qswitch_act_impl<half>(x, gate, up, idx, act, p, part, tg, tid, lane, sg);
}

kernel void qswitch_down_float16(const device uchar* dw [[buffer(7)]], const device half* ds [[buffer(8)]],
                               const device half* db [[buffer(9)]], const device int* idx [[buffer(10)]],
                               const device float* scores [[buffer(11)]], device float* out [[buffer(12)]],
                               constant QSwitchGLUParams& p [[buffer(13)]], const device float* act [[buffer(14)]],
                               uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                               uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]]) {
    threadgroup float part[QMV_SG * QMV_ROWS];
    QMat<half> down = {dw, ds, db, p.I, p.down_bits, p.down_group};
    qswitch_down_impl<half>(down, idx, scores, act, out, p, part, tg, tid, lane, sg);
}

kernel void qmv_bfloat16(const device float* x [[buffer(0)]], const device uchar* w [[buffer(1)]],
                       const device bfloat* s [[buffer(2)]], const device bfloat* b [[buffer(3)]],
                       device float* out [[buffer(4)]], constant QuantParams& p [[buffer(5)]],
                       uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                       uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]]) {
    threadgroup float part[QMV_SG * QMV_ROWS];
    qmv_impl<bfloat>(x, w, s, b, out, p, part, tg.x, tid, lane, sg);
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

kernel void qswitch_act_bfloat16(const device float* x [[buffer(0)]],
                               const device uchar* gw [[buffer(1)]], const device bfloat* gs [[buffer(2)]],
                               const device bfloat* gb [[buffer(3)]], const device uchar* uw [[buffer(4)]],
                               const device bfloat* us [[buffer(5)]], const device bfloat* ub [[buffer(6)]],
                               const device int* idx [[buffer(10)]],
                               constant QSwitchGLUParams& p [[buffer(13)]], device float* act [[buffer(14)]],
                               uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                               uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]]) {
    threadgroup float part[QMV_SG * 2 * QMV_ROWS];
    QMat<bfloat> gate = {gw, gs, gb, p.H, p.gate_bits, p.gate_group};
    QMat<bfloat> up = {uw, us, ub, p.H, p.up_bits, p.up_group};
    qswitch_act_impl<bfloat>(x, gate, up, idx, act, p, part, tg, tid, lane, sg);
}

kernel void qswitch_down_bfloat16(const device uchar* dw [[buffer(7)]], const device bfloat* ds [[buffer(8)]],
                               const device bfloat* db [[buffer(9)]], const device int* idx [[buffer(10)]],
                               const device float* scores [[buffer(11)]], device float* out [[buffer(12)]],
                               constant QSwitchGLUParams& p [[buffer(13)]], const device float* act [[buffer(14)]],
                               uint3 tg [[threadgroup_position_in_grid]], uint tid [[thread_index_in_threadgroup]],
                               uint lane [[thread_index_in_simdgroup]], uint sg [[simdgroup_index_in_threadgroup]]) {
    threadgroup float part[QMV_SG * QMV_ROWS];
    QMat<bfloat> down = {dw, ds, db, p.I, p.down_bits, p.down_group};
    qswitch_down_impl<bfloat>(down, idx, scores, act, out, p, part, tg, tid, lane, sg);
}
