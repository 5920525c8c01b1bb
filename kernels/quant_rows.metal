// quant_rows: what the quant and qswitch families share (included by both, after the
// prelude): the packed rows (MLX's affine format, read in place: QMat), the units of 8
// codes and the 32-code chunks, x staged in threadgroup memory, the simdgroup reductions
// and q_index. Packed rows are little-endian bit streams of b-bit codes; 8 consecutive
// codes fill exactly b bytes, so every width decodes by one rule (q8).
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

    // dot is row r dotted with x (x in device memory) in the Go twin's order: qmm's
    // one-thread-per-output twin, bit for bit with the CPU.
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

// qmv (decode): output rows in blocks of QMV_ROWS; a threadgroup of (tx, ty) threads
// takes an even share of the blocks, ty slots at a time, the tx threads of a slot (tx /
// 32 simdgroups, which Encode picks from K) sharing a block. Unit path: packed rows are
// cut into units of 8 codes (bits bytes, inside one group); thread t of a slot takes
// units t, t + tx, ... of every row of its block: each load of a simdgroup reads 32
// consecutive units of a row (contiguous bytes), and each thread loads its 8 x values
// and their sum once for all rows. Every row's scale and bias apply per unit:
// s * (x . q) + b * sum(x). (The staged path, below, takes 32-code chunks.) The
// partial sums are added by q_rows_simd, then across a slot's simdgroups in threadgroup
// memory, in a fixed order. The sums are the Go twin's, added in another order (within
// the catalog's tolerance); qmm below 4 rows keeps the Go twin's order.
#define QMV_ROWS 8
#define QMV_MAXSG 8

// q_unit loads unit u of a packed row: 8 codes of B bits at byte u * B.
template <int B>
inline ulong q_unit(const device uchar* row, int u) {
    if (B == 4) {
        return ulong(((const device uint*)row)[u]);
    }
    if (B == 8) {
        const device uint* p = (const device uint*)row + 2 * u;
        return ulong(p[0]) | (ulong(p[1]) << 32);
    }
    if (B == 2) {
        return ulong(((const device ushort*)row)[u]);
    }
    return q8(row + size_t(u) * B, B);
}

// q_float is the code q < 2^23 as a float, exactly: q in the mantissa of 2^23, less
// 2^23 (an integer-to-float conversion runs at a quarter of the float rate on some GPUs).
inline float q_float(uint q) {
    return as_type<float>(q | 0x4B000000u) - 8388608.0f;
}

// q_decode8 is x . q for the 8 codes of a unit.
template <int B>
inline float q_decode8(ulong v, thread const float* xv) {
    float d = 0.0f;
    if (B <= 4) {  // 32-bit shifts where the unit fits
        uint w = uint(v);
        for (int j = 0; j < 8; j++) {
            d += xv[j] * q_float((w >> (j * B)) & ((1u << B) - 1u));
        }
    } else {
        for (int j = 0; j < 8; j++) {
            d += xv[j] * q_float(uint((v >> (j * B)) & ((ulong(1) << B) - 1)));
        }
    }
    return d;
}

// q_load8 loads the 8 x values of unit u and returns their sum.
inline float q_load8(const device float* x, int u, thread float* xv) {
    float xs = 0.0f;
    for (int j = 0; j < 8; j++) {
        xv[j] = x[u * 8 + j];
        xs += xv[j];
    }
    return xs;
}

// q_rows_unit adds f * (s * (x . q) + b * sum(x)) for unit u of rows n0 + r of m to
// acc[r], r < QMV_ROWS; rows past last repeat row n0 + last (their sums are never
// written). The loop bounds are constants and every load comes before any use, so the
// loads of all rows are in flight together.
template <typename S, int B>
inline void q_rows_unit(QMat<S> m, size_t n0, int last, int u, thread const float* xv, float xs, float f,
                        thread float* acc) {
    ulong v[QMV_ROWS];
    float sc[QMV_ROWS];
    float bi[QMV_ROWS];
    size_t rb = size_t(m.row_bytes());
    size_t gs = size_t(m.groups());
    size_t g = size_t(u * 8 / m.group);
    for (int r = 0; r < QMV_ROWS; r++) {
        size_t n = n0 + size_t(min(r, last));
        v[r] = q_unit<B>(m.w + n * rb, u);
        sc[r] = float(m.s[n * gs + g]);
        bi[r] = float(m.b[n * gs + g]);
    }
    for (int r = 0; r < QMV_ROWS; r++) {
        acc[r] += f * (sc[r] * q_decode8<B>(v[r], xv) + bi[r] * xs);
    }
}

// q_rows_unit_rt is q_rows_unit for a width known at run time (uniform): the experts'
// three matrices may have three widths.
template <typename S>
inline void q_rows_unit_rt(QMat<S> m, size_t n0, int last, int u, thread const float* xv, float xs,
                           float f, thread float* acc) {
    switch (m.bits) {
    case 2: q_rows_unit<S, 2>(m, n0, last, u, xv, xs, f, acc); break;
    case 3: q_rows_unit<S, 3>(m, n0, last, u, xv, xs, f, acc); break;
    case 4: q_rows_unit<S, 4>(m, n0, last, u, xv, xs, f, acc); break;
    case 5: q_rows_unit<S, 5>(m, n0, last, u, xv, xs, f, acc); break;
    case 6: q_rows_unit<S, 6>(m, n0, last, u, xv, xs, f, acc); break;
    default: q_rows_unit<S, 8>(m, n0, last, u, xv, xs, f, acc); break;
    }
}

// q_rows_simd adds each of the QMV_ROWS (8) partial sums acc over the simdgroup by a
// transposing butterfly (9 shuffles, not 40): each step a lane keeps half of its rows
// and sends the other half to its partner, so lanes 4r to 4r + 3 end with row r's total.
inline float q_rows_simd(thread const float* acc, uint lane) {
    float a[4];
    bool h = (lane & 16) != 0;
    for (int i = 0; i < 4; i++) {
        a[i] = (h ? acc[i + 4] : acc[i]) + simd_shuffle_xor(h ? acc[i] : acc[i + 4], 16);
    }
    float b[2];
    h = (lane & 8) != 0;
    for (int i = 0; i < 2; i++) {
        b[i] = (h ? a[i + 2] : a[i]) + simd_shuffle_xor(h ? a[i] : a[i + 2], 8);
    }
    h = (lane & 4) != 0;
    float c = (h ? b[1] : b[0]) + simd_shuffle_xor(h ? b[0] : b[1], 4);
    c += simd_shuffle_xor(c, 2);
    return c + simd_shuffle_xor(c, 1);
}

// q_rows_reduce adds each row's partial sums over a row block of nsg simdgroups (the
// threadgroup's simdgroups sg0 .. sg0 + nsg - 1; nsg uniform): q_rows_simd, then the
// simdgroups in order through part. It returns row `row`'s total, row -1 (nothing to
// write) for all but one thread a row: with one simdgroup lane 4r, else thread r of the
// block (bt). Every thread of the threadgroup calls it (with nsg > 1 it holds barriers).
inline float q_rows_reduce(thread float* acc, threadgroup float* part, int rows, uint bt, uint lane,
                           uint sg, uint sg0, uint nsg, thread int& row) {
    float v = q_rows_simd(acc, lane);
    if (nsg == 1) {
        row = (lane & 3) == 0 && int(lane >> 2) < rows ? int(lane >> 2) : -1;
        return v;
    }
    if ((lane & 3) == 0) {
        part[sg * QMV_ROWS + (lane >> 2)] = v;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float y = 0.0f;
    row = int(bt) < rows ? int(bt) : -1;
    if (row >= 0) {
        for (uint g = 0; g < nsg; g++) {
            y += part[(sg0 + g) * QMV_ROWS + bt];
        }
    }
    // The caller may reuse part: every thread must have read it first.
    threadgroup_barrier(mem_flags::mem_threadgroup);
    return y;
}

// The staged path of qmv (the qmv_staged entries), for 2-, 4- and 8-bit rows of at most
// QMV_XMAX codes and threadgroups of many row blocks: the threadgroup first copies x to
// threadgroup memory (16-byte aligned), each chunk of 32 values padded to QMV_XPAD (a
// lane reads its chunk as 8 float4s; the 8 lanes of a quarter simdgroup reading 8 chunks
// hit 32 banks), with the sum of the chunk. Lane l then takes chunks l, l + 32, ... of
// its rows: a chunk is 32 codes, B words (one 16-byte load at 4 bits: q_words), inside
// one group, so one scale and one bias serve it. Code
// j of a half word is read in place, masked into the mantissa of 2^23 (one and, no
// shift): x_j is staged multiplied by 2^-(B*j) (exact, a power of two), and the high
// half word is shifted down once.
#define QMV_XMAX 4096
#define QMV_XPAD 36

// q_stage_x copies x[0, K) to xs and, with SUMS, the chunk sums to cs (nthr a multiple
// of 32 and K of 32, so each simdgroup stages whole chunks), QMV_STAGE loads a thread
// in flight; the caller puts a barrier after it.
#define QMV_STAGE 16
template <int B, bool SUMS = true>
inline void q_stage_x(const device float* xr, int K, threadgroup float* xs, threadgroup float* cs, uint tid,
                      uint lane, uint nthr) {
    for (int k0 = int(tid); k0 < K; k0 += QMV_STAGE * int(nthr)) {
        float v[QMV_STAGE];
        for (int i = 0; i < QMV_STAGE; i++) {
            int k = k0 + i * int(nthr);
            v[i] = k < K ? xr[k] : 0.0f;
        }
        for (int i = 0; i < QMV_STAGE; i++) {
            int k = k0 + i * int(nthr);  // k < K is uniform in a simdgroup
            float cv = SUMS ? simd_sum(v[i]) : 0.0f;
            if (k < K) {
                int j = k & 31;
                xs[(k >> 5) * QMV_XPAD + j] = v[i] * as_type<float>(uint(127 - B * (j % (16 / B))) << 23);
                if (SUMS && lane == 0) {
                    cs[k >> 5] = cv;
                }
            }
        }
    }
}

// q_chunk_dot is x . q for the 32 codes of a chunk (its B words wd, its staged x xc).
// Each half word gets the exponent of 2^23 once (lo, hi); then code j is one and with
// a constant that keeps that exponent and the code's bits: q * 2^(B*j) + 2^23 as a
// float, less 2^23 (exact). The low half is the whole word or-ed with the exponent:
// (w | e) & (e | m) = e | (w & m), so the high bits need no clearing first (one
// instruction a word fewer; qmv 1024 -> 248320 57.5 -> 56.5 us, docs/h200/run16-exp2.log).
// One accumulator: a thread's rows are independent chains enough.
template <int B>
inline float q_chunk_dot(thread const uint* wd, thread const float* xc) {
    float d = 0.0f;
    for (int i = 0; i < B; i++) {
        uint lo = wd[i] | 0x4B000000u;
        uint hi = (wd[i] >> 16) | 0x4B000000u;
        for (int j = 0; j < 16 / B; j++) {
            uint keep = 0x4B000000u | (((1u << B) - 1u) << (B * j));
            d = fma(xc[i * (32 / B) + j], as_type<float>(lo & keep) - 8388608.0f, d);
            d = fma(xc[i * (32 / B) + 16 / B + j], as_type<float>(hi & keep) - 8388608.0f, d);
        }
    }
    return d;
}

// q_words loads the B words of a chunk at p as vectors: uint2 at 2 bits, uint4s else
// (one 16-byte load at 4 bits, not four 4-byte ones). p is 8-byte aligned at 2 bits and
// 16-byte aligned else: a chunk's offset in its matrix is, and Encode takes these
// entries only for matrices bound at such offsets (qAligned).
template <int B>
inline void q_words(const device uint* p, thread uint* wd) {
    if (B == 2) {
        uint2 v = *(const device uint2*)p;
        wd[0] = v.x;
        wd[1] = v.y;
        return;
    }
    for (int q = 0; q < B / 4; q++) {
        uint4 v = ((const device uint4*)p)[q];
        wd[4 * q] = v.x;
        wd[4 * q + 1] = v.y;
        wd[4 * q + 2] = v.z;
        wd[4 * q + 3] = v.w;
    }
}

// q_chunk_load loads chunk c of rows n0 + r of m, r < R (rows past last repeat row n0 +
// last): B words, a scale and a bias a row, into wd[r * B + i], sc[r], bi[r].
template <typename S, int B, int R>
inline void q_chunk_load(QMat<S> m, size_t n0, int last, int c, thread uint* wd, thread float* sc,
                         thread float* bi) {
    int rw = m.cols * B / 32;  // words a row
    int gsh = 5 + (m.group >> 6);  // log2(group): groups are 32, 64 or 128 (CheckQuant)
    int gs = m.cols >> gsh;       // groups a row
    // One 64-bit base a call; the rows at 32-bit offsets from it (a block's rows are close).
    const device uint* wp = (const device uint*)m.w + n0 * size_t(rw) + size_t(c * B);
    size_t g0 = n0 * size_t(gs) + size_t((c * 32) >> gsh);
    for (int r = 0; r < R; r++) {
        int o = min(r, last);
        q_words<B>(wp + o * rw, wd + r * B);
        sc[r] = float(m.s[g0 + size_t(o * gs)]);
        bi[r] = float(m.b[g0 + size_t(o * gs)]);
    }
}

// q_chunk_add adds f * (s * (x . q) + b * sum(x)) for R rows loaded by q_chunk_load to
// acc[r], as two fused multiply-adds (f = 1 folds away): qmv 1024 -> 248320 56.5 -> 55.5
// us and qswitch_glu 20.1 -> 19.2 with the one accumulator above (docs/h200/run16-exp3.log).
template <int B, int R>
inline void q_chunk_add(thread const uint* wd, thread const float* sc, thread const float* bi,
                        thread const float* xc, float xsum, float f, thread float* acc) {
    for (int r = 0; r < R; r++) {
        acc[r] = fma(f * sc[r], q_chunk_dot<B>(wd + r * B, xc), fma(f * bi[r], xsum, acc[r]));
    }
}

// q_rows_chunk adds f * (s * (x . q) + b * sum(x)) for chunk c of rows n0 + r of m to
// acc[r], r < QMV_ROWS (rows past last repeat row n0 + last), every load first.
template <typename S, int B>
inline void q_rows_chunk(QMat<S> m, size_t n0, int last, int c, thread const float* xc, float xsum, float f,
                         thread float* acc) {
    uint wd[QMV_ROWS * B];
    float sc[QMV_ROWS];
    float bi[QMV_ROWS];
    q_chunk_load<S, B, QMV_ROWS>(m, n0, last, c, wd, sc, bi);
    q_chunk_add<B, QMV_ROWS>(wd, sc, bi, xc, xsum, f, acc);
}

// q_chunk_x4 loads staged chunk c into registers as 8 float4s.
inline void q_chunk_x4(threadgroup const float* xs, int c, thread float* xc) {
    threadgroup const float4* x4 = (threadgroup const float4*)(xs + c * QMV_XPAD);
    for (int q = 0; q < 8; q++) {
        float4 v = x4[q];
        xc[4 * q] = v.x;
        xc[4 * q + 1] = v.y;
        xc[4 * q + 2] = v.z;
        xc[4 * q + 3] = v.w;
    }
}

// q_chunk_xsum is q_chunk_x for x staged without the chunk sums (q_stage_x<B, false>):
// the sum is taken here, each value's staging scale undone (exact, a power of two).
template <int B>
inline float q_chunk_xsum(threadgroup const float* xs, int c, thread float* xc) {
    q_chunk_x4(xs, c, xc);
    float s0 = 0.0f, s1 = 0.0f;
    for (int j = 0; j < 32; j++) {
        float up = as_type<float>(uint(127 + B * (j % (16 / B))) << 23);
        if (j % 2 == 0) {
            s0 = fma(xc[j], up, s0);
        } else {
            s1 = fma(xc[j], up, s1);
        }
    }
    return s0 + s1;
}

// q_chunk_x loads staged chunk c into registers and returns its sum.
inline float q_chunk_x(threadgroup const float* xs, threadgroup const float* cs, int c, thread float* xc) {
    q_chunk_x4(xs, c, xc);
    return cs[c];
}

// q_index wraps a negative index; -1 for one out of range (the Go twin fails the
// launch for an out-of-range id; qembed's MSL twin writes zeros and reports it in the
// batch's error word, see index_fault).
inline int q_index(int i, int n) {
    if (i < 0) i += n;
    return (i >= 0 && i < n) ? i : -1;
}
