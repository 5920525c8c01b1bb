// quant family: affine-quantized matrices used in place (MLX's format). Packed rows are
// little-endian bit streams of b-bit codes; 8 consecutive codes fill exactly b bytes,
// so every width decodes by one rule (q8). A row's dot with x is, per group,
// scale*(x.q) + bias*sum(x), in the Go twin's order: at 4 and 8 bits its 16-lane order
// (quant16.go, dot16 here), at the other widths the four-lane order, groups summed in
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

// fold16 ends a 16-lane dot: lane l is (acc[0][l] + acc[1][l]) + bl[l] (even groups,
// odd groups, biases), then lanes l+8, l+4, l+2, l+1 fold onto lane l.
inline float fold16(thread float* a0, thread float* a1, thread float* bl) {
    for (int l = 0; l < 16; l++) {
        bl[l] = (a0[l] + a1[l]) + bl[l];
    }
    for (int n = 8; n >= 1; n /= 2) {
        for (int l = 0; l < n; l++) {
            bl[l] += bl[l + n];
        }
    }
    return bl[0];
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

    // code16 is code k of a packed 4- or 8-bit row p, as float.
    float code16(const device uchar* p, int k) const {
        return bits == 4 ? float((p[k / 2] >> (4 * (k & 1))) & 15) : float(p[k]);
    }

    // dot16 is row r dotted with x in the 16-lane order of 4- and 8-bit codes: per
    // 32-code chunk, lane l takes x*q for code a = 2l (8 bits: l) then b = 2l+1 (16+l),
    // by fused multiply-adds after the group's first product; each lane's group partial
    // is scaled into acc[g mod 2][l] (fused); bias*sum(x) of group g goes to
    // bl[g mod 16] (fused); fold16 ends it.
    float dot16(const device float* x, int r) const {
        const device uchar* p = w + r * row_bytes();
        float acc[2][16];
        float bl[16];
        for (int l = 0; l < 16; l++) {
            acc[0][l] = 0.0f;
            acc[1][l] = 0.0f;
            bl[l] = 0.0f;
        }
        for (int g = 0; g < groups(); g++) {
            float sc = float(s[r * groups() + g]);
            for (int l = 0; l < 16; l++) {
                int a = bits == 4 ? 2 * l : l;
                int b2 = bits == 4 ? 2 * l + 1 : 16 + l;
                float lane = 0.0f;
                for (int c = g * group; c < (g + 1) * group; c += 32) {
                    lane = c == g * group ? x[c + a] * code16(p, c + a) : fma(x[c + a], code16(p, c + a), lane);
                    lane = fma(x[c + b2], code16(p, c + b2), lane);
                }
                acc[g % 2][l] = fma(sc, lane, acc[g % 2][l]);
            }
            bl[g % 16] = fma(float(b[r * groups() + g]), group_sum(x, g), bl[g % 16]);
        }
        return fold16(acc[0], acc[1], bl);
    }

    // dot is row r dotted with x (x in device memory).
    float dot(const device float* x, int r) const {
        if (bits == 4 || bits == 8) {
            return dot16(x, r);
        }
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

template <typename S>
inline void qmv_impl(const device float* x, const device uchar* w, const device S* s,
                     const device S* b, device float* out, constant QuantParams& p, uint n) {
    if (int(n) >= p.N) return;
    QMat<S> m = {w, s, b, p.K, p.bits, p.group};
    for (int i = 0; i < p.M; i++) {
        out[i * p.N + int(n)] = m.dot(x + i * p.K, int(n));
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

// qswitch_act is the activation of an expert's intermediate row i (silu(gate . x) *
// (up . x)).
template <typename S>
inline float qswitch_act(QMat<S> gate, QMat<S> up, const device float* xr, int i) {
    float gv = gate.dot(xr, i);
    float uv = up.dot(xr, i);
    return (gv / (1.0f + exp(-gv))) * uv;
}

// qswitch_down is down row r dotted with the activations of the expert whose
// intermediate rows start at i0, in the four-lane order.
template <typename S>
inline float qswitch_down(QMat<S> gate, QMat<S> up, QMat<S> down, const device float* xr, int i0, int r) {
    const device uchar* dp = down.w + r * down.row_bytes();
    ulong mask = (ulong(1) << down.bits) - 1;
    float acc = 0.0f;
    for (int g = 0; g < down.groups(); g++) {
        float l[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        float a[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        for (int c = 0; c < down.group; c += 8) {
            int k = g * down.group + c;
            ulong v = q8(dp + k / 8 * down.bits, down.bits);
            for (int jj = 0; jj < 8; jj++) {
                float act = qswitch_act(gate, up, xr, i0 + k + jj);
                l[jj & 3] += act * float((v >> (jj * down.bits)) & mask);
                a[jj & 3] += act;
            }
        }
        float d = (l[0] + l[1]) + (l[2] + l[3]);
        float asum = (a[0] + a[1]) + (a[2] + a[3]);
        int gi = r * down.groups() + g;
        acc += float(down.s[gi]) * d + float(down.b[gi]) * asum;
    }
    return acc;
}

// qswitch_down16 is qswitch_down in the 16-lane order of 4- and 8-bit codes (QMat's
// dot16 with the activations for x).
template <typename S>
inline float qswitch_down16(QMat<S> gate, QMat<S> up, QMat<S> down, const device float* xr, int i0, int r) {
    const device uchar* p = down.w + r * down.row_bytes();
    float acc[2][16];
    float bl[16];
    for (int l = 0; l < 16; l++) {
        acc[0][l] = 0.0f;
        acc[1][l] = 0.0f;
        bl[l] = 0.0f;
    }
    for (int g = 0; g < down.groups(); g++) {
        float sc = float(down.s[r * down.groups() + g]);
        for (int l = 0; l < 16; l++) {
            int a = down.bits == 4 ? 2 * l : l;
            int b2 = down.bits == 4 ? 2 * l + 1 : 16 + l;
            float lane = 0.0f;
            for (int c = g * down.group; c < (g + 1) * down.group; c += 32) {
                float xa = qswitch_act(gate, up, xr, i0 + c + a);
                lane = c == g * down.group ? xa * down.code16(p, c + a) : fma(xa, down.code16(p, c + a), lane);
                lane = fma(qswitch_act(gate, up, xr, i0 + c + b2), down.code16(p, c + b2), lane);
            }
            acc[g % 2][l] = fma(sc, lane, acc[g % 2][l]);
        }
        float s4[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        for (int k = g * down.group; k < (g + 1) * down.group; k++) {
            s4[k & 3] += qswitch_act(gate, up, xr, i0 + k);
        }
        bl[g % 16] = fma(float(down.b[r * down.groups() + g]), (s4[0] + s4[1]) + (s4[2] + s4[3]), bl[g % 16]);
    }
    return fold16(acc[0], acc[1], bl);
}

// qswitch_glu: thread (h, t) recomputes each routed expert's activations (act_i =
// silu(gate_i . x) * (up_i . x)) and accumulates score * down_h . act in the Go
// twin's order (qswitch_down, or qswitch_down16 at 4 and 8 bits).
template <typename S>
inline void qswitch_impl(const device float* x, QMat<S> gate, QMat<S> up, QMat<S> down,
                         const device int* idx, const device float* scores, device float* out,
                         constant QSwitchGLUParams& p, uint2 gid) {
    int h = int(gid.x), t = int(gid.y);
    if (h >= p.H || t >= p.T) return;
    const device float* xr = x + t * p.H;
    float y = 0.0f;
    for (int j = 0; j < p.K; j++) {
        int e = q_index(idx[t * p.K + j], p.E);
        if (e < 0) continue;
        int r = e * p.H + h;
        float acc = (down.bits == 4 || down.bits == 8) ? qswitch_down16(gate, up, down, xr, e * p.I, r)
                                                       : qswitch_down(gate, up, down, xr, e * p.I, r);
        y += acc * scores[t * p.K + j];
    }
    out[t * p.H + h] = y;
}

// Entries: one per kernel and scale type (the emulation harness and Metal's library
// both find kernels by their written names, so they are spelled out).

kernel void qmv_float32(const device float* x [[buffer(0)]], const device uchar* w [[buffer(1)]],
                       const device float* s [[buffer(2)]], const device float* b [[buffer(3)]],
                       device float* out [[buffer(4)]], constant QuantParams& p [[buffer(5)]],
                       uint n [[thread_position_in_grid]]) {
    qmv_impl<float>(x, w, s, b, out, p, n);
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

kernel void qswitch_glu_float32(const device float* x [[buffer(0)]],
                               const device uchar* gw [[buffer(1)]], const device float* gs [[buffer(2)]],
                               const device float* gb [[buffer(3)]], const device uchar* uw [[buffer(4)]],
                               const device float* us [[buffer(5)]], const device float* ub [[buffer(6)]],
                               const device uchar* dw [[buffer(7)]], const device float* ds [[buffer(8)]],
                               const device float* db [[buffer(9)]], const device int* idx [[buffer(10)]],
                               const device float* scores [[buffer(11)]], device float* out [[buffer(12)]],
                               constant QSwitchGLUParams& p [[buffer(13)]],
                               uint2 gid [[thread_position_in_grid]]) {
    QMat<float> gate = {gw, gs, gb, p.H, p.gate_bits, p.gate_group};
    QMat<float> up = {uw, us, ub, p.H, p.up_bits, p.up_group};
    QMat<float> down = {dw, ds, db, p.I, p.down_bits, p.down_group};
    qswitch_impl<float>(x, gate, up, down, idx, scores, out, p, gid);
}

kernel void qmv_float16(const device float* x [[buffer(0)]], const device uchar* w [[buffer(1)]],
                       const device half* s [[buffer(2)]], const device half* b [[buffer(3)]],
                       device float* out [[buffer(4)]], constant QuantParams& p [[buffer(5)]],
                       uint n [[thread_position_in_grid]]) {
    qmv_impl<half>(x, w, s, b, out, p, n);
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

kernel void qswitch_glu_float16(const device float* x [[buffer(0)]],
                               const device uchar* gw [[buffer(1)]], const device half* gs [[buffer(2)]],
                               const device half* gb [[buffer(3)]], const device uchar* uw [[buffer(4)]],
                               const device half* us [[buffer(5)]], const device half* ub [[buffer(6)]],
                               const device uchar* dw [[buffer(7)]], const device half* ds [[buffer(8)]],
                               const device half* db [[buffer(9)]], const device int* idx [[buffer(10)]],
                               const device float* scores [[buffer(11)]], device float* out [[buffer(12)]],
                               constant QSwitchGLUParams& p [[buffer(13)]],
                               uint2 gid [[thread_position_in_grid]]) {
    QMat<half> gate = {gw, gs, gb, p.H, p.gate_bits, p.gate_group};
    QMat<half> up = {uw, us, ub, p.H, p.up_bits, p.up_group};
    QMat<half> down = {dw, ds, db, p.I, p.down_bits, p.down_group};
    qswitch_impl<half>(x, gate, up, down, idx, scores, out, p, gid);
}

kernel void qmv_bfloat16(const device float* x [[buffer(0)]], const device uchar* w [[buffer(1)]],
                       const device bfloat* s [[buffer(2)]], const device bfloat* b [[buffer(3)]],
                       device float* out [[buffer(4)]], constant QuantParams& p [[buffer(5)]],
                       uint n [[thread_position_in_grid]]) {
    qmv_impl<bfloat>(x, w, s, b, out, p, n);
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

kernel void qswitch_glu_bfloat16(const device float* x [[buffer(0)]],
                               const device uchar* gw [[buffer(1)]], const device bfloat* gs [[buffer(2)]],
                               const device bfloat* gb [[buffer(3)]], const device uchar* uw [[buffer(4)]],
                               const device bfloat* us [[buffer(5)]], const device bfloat* ub [[buffer(6)]],
                               const device uchar* dw [[buffer(7)]], const device bfloat* ds [[buffer(8)]],
                               const device bfloat* db [[buffer(9)]], const device int* idx [[buffer(10)]],
                               const device float* scores [[buffer(11)]], device float* out [[buffer(12)]],
                               constant QSwitchGLUParams& p [[buffer(13)]],
                               uint2 gid [[thread_position_in_grid]]) {
    QMat<bfloat> gate = {gw, gs, gb, p.H, p.gate_bits, p.gate_group};
    QMat<bfloat> up = {uw, us, ub, p.H, p.up_bits, p.up_group};
    QMat<bfloat> down = {dw, ds, db, p.I, p.down_bits, p.down_group};
    qswitch_impl<bfloat>(x, gate, up, down, idx, scores, out, p, gid);
}
