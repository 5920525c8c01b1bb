// quant family: affine-quantized matrices used in place (MLX's format). Packed rows are
// little-endian bit streams of b-bit codes; 8 consecutive codes fill exactly b bytes,
// so every width decodes by one rule (q8). A row's dot with x is, per group,
// scale*(x.q) + bias*sum(x): in qmm and qembed in the Go twin's four-lane order, groups
// summed in order; in qmv and qswitch_glu per unit of 8 codes, spread over a
// threadgroup (below). Scales and biases are float, half or bfloat (one template per
// kernel).
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
// the catalog's tolerance); qmm keeps the Go twin's order.
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
// float, less 2^23 (exact).
template <int B>
inline float q_chunk_dot(thread const uint* wd, thread const float* xc) {
    float d0 = 0.0f, d1 = 0.0f;
    for (int i = 0; i < B; i++) {
        uint lo = (wd[i] & 0xFFFFu) | 0x4B000000u;
        uint hi = (wd[i] >> 16) | 0x4B000000u;
        for (int j = 0; j < 16 / B; j++) {
            uint keep = 0x4B000000u | (((1u << B) - 1u) << (B * j));
            d0 = fma(xc[i * (32 / B) + j], as_type<float>(lo & keep) - 8388608.0f, d0);
            d1 = fma(xc[i * (32 / B) + 16 / B + j], as_type<float>(hi & keep) - 8388608.0f, d1);
        }
    }
    return d0 + d1;
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
// acc[r].
template <int B, int R>
inline void q_chunk_add(thread const uint* wd, thread const float* sc, thread const float* bi,
                        thread const float* xc, float xsum, float f, thread float* acc) {
    for (int r = 0; r < R; r++) {
        acc[r] += f * fma(sc[r], q_chunk_dot<B>(wd + r * B, xc), bi[r] * xsum);
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

// qswitch_down_chunks is qswitch_down_loop by (expert, chunk) pairs.
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
        uint wd[QMV_ROWS * B];
        float ws[QMV_ROWS];
        float wb[QMV_ROWS];
        q_chunk_load<S, B, QMV_ROWS>(down, size_t(max(e, 0)) * size_t(H) + size_t(h0), last, c, wd, ws, wb);
        float d[QMV_ROWS];
        for (int r = 0; r < QMV_ROWS; r++) {
            d[r] = 0.0f;
        }
        q_chunk_add<B, QMV_ROWS>(wd, ws, wb, xc, xs, sc, d);
        for (int r = 0; r < QMV_ROWS; r++) {
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
    int h0 = int(tg.x) * QMV_ROWS;
    int t = int(tg.y);
    if (t >= p.T) {
        return;  // as in qswitch_act
    }
    int rows = min(QMV_ROWS, p.H - h0);
    if (rows <= 0) {
        return;
    }
    float acc[QMV_ROWS];
    for (int r = 0; r < QMV_ROWS; r++) {
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
    int row;
    float y = q_rows_reduce(acc, part, rows, tid, lane, sg, 0, nthr / 32, row);
    if (row >= 0) {
        out[size_t(t) * size_t(p.H) + size_t(h0 + row)] = y;
    }
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
