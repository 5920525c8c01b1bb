// sdpa family: scaled dot-product attention, in two passes over a split of the keys.
//
// sdpa_float32: one threadgroup of SDPA_SG simdgroups (or fewer, nsg, where the
// pipeline allows fewer threads) per (query row i, split, up to
// SDPA_MAXG query heads of one key/value head); grid (ng * splits * Sq, Hkv, B), where
// ng = ceil(G / SDPA_MAXG) for G = Hq / Hkv. The heads share every key and value row
// the threadgroup loads (grouped-query attention reads the cache once). The split takes
// keys [split * chunk, (split + 1) * chunk); simdgroup g takes SDPA_KB keys at a time
// (g * SDPA_KB, then SDPA_SG * SDPA_KB further on), the next step's rows loaded before
// this step's are used (two buffers). Lane l holds elements l, l + 32,
// ... of the rows (D, Dv <= 256); the SDPA_KB * SDPA_MAXG (key, head) dot partials are
// added over the simdgroup by one transposing butterfly, so that each lane ends with
// one (key, head) score (sdpa_scores: one shuffle a score, not five) and takes its
// weight with one exp. Each head keeps an online softmax (max m, sum l, weighted value
// row acc) whose max is rescaled lazily: only when a score passes m by more than
// SDPA_LAZY (uniform; rare after the first keys), so a weight is at most e^SDPA_LAZY
// and a key costs no rescaling exp. The partials are merged through threadgroup
// memory. With one split the rows are finished there; otherwise each split's max, sum
// and unnormalized value row go to the launch's scratch and sdpa_combine_float32
// merges the splits. q is contiguous; k and v have a unit stride on the last axis and
// any other strides; the bool mask (true = attend) has any strides. A row with no
// attended key outputs 0.
#include "prelude.metal"

#define SDPA_SG 4
// Keys a simdgroup step: SDPA_KB * SDPA_MAXG (key, head) scores, at most 32 (one a lane).
// At 32,768 keys on the H200 translation: 52 us at 4 keys a step with two buffers,
// against 58 at 2 keys, and 64 / 55 at 4 / 8 keys with one (docs/h200/run12-exp2.log).
#define SDPA_KB 4
#define SDPA_MAXG 4
#define SDPA_MAXD 256
#define SDPA_MAXC (SDPA_MAXD / 32)
#define SDPA_COMBINE_SG 16
#define SDPA_NV (SDPA_KB * SDPA_MAXG)
#define SDPA_DUP (32 / SDPA_NV)  // lanes holding each (key, head) score
// The lazy max's slack: weights up to e^8 (their sums stay far from float's range).
#define SDPA_LAZY 8.0f

// sdpa_ml and sdpa_acc are a split's (max, sum) and value row in the scratch: every
// (row, split)'s pair first, then every value row.
inline device float* sdpa_ml(device float* part, size_t row, int split, constant SdpaConsts& p) {
    return part + 2 * (row * size_t(p.splits) + size_t(split));
}

inline device float* sdpa_acc(device float* part, size_t row, int split, constant SdpaConsts& p) {
    size_t rows = size_t(p.B) * size_t(p.Hq) * size_t(p.Sq);
    return part + 2 * rows * size_t(p.splits) + (row * size_t(p.splits) + size_t(split)) * size_t(p.Dv);
}

// SDPAKeys is what a simdgroup's key steps read: the key and value rows of the
// threadgroup's key/value head, the mask row of its first query head, and the
// parameters the steps use, read from the constant buffer once (so the inner loops
// keep them in registers).
struct SDPAKeys {
    const device float* k;
    const device float* v;
    const device uchar* mr;
    size_t ks;  // key and value row strides
    size_t vs;
    size_t mh;  // mask strides: query head, key
    size_t mk;
    int D;
    int Dv;
    int j1;  // the end of the split's keys
    int nh;  // query heads of the threadgroup; the rest repeat the last
    float scale;
    bool masked;
};

// sdpa_load_keys loads the key and value rows j .. j + SDPA_KB - 1, zeros from j1 on:
// lane l holds elements l, l + 32, ... of each, zeros past D and Dv (q is zero there
// too, so the dot needs no select). One row pointer a key; each element a load at a
// constant offset from it.
inline void sdpa_load_keys(thread const SDPAKeys& s, int j, uint lane, thread float (*kv)[SDPA_MAXC],
                           thread float (*vv)[SDPA_MAXC]) {
    for (int u = 0; u < SDPA_KB; u++) {
        bool in = j + u < s.j1;  // uniform
        int jc = in ? j + u : 0;
        const device float* kr = s.k + size_t(jc) * s.ks + lane;
        const device float* vr = s.v + size_t(jc) * s.vs + lane;
        for (int c = 0; c < SDPA_MAXC; c++) {
            kv[u][c] = in && int(lane) + 32 * c < s.D ? kr[32 * c] : 0.0f;
            vv[u][c] = in && int(lane) + 32 * c < s.Dv ? vr[32 * c] : 0.0f;
        }
    }
}

// sdpa_scores adds the SDPA_NV partials d[v] (v = key u * SDPA_MAXG + head h) over the
// simdgroup by a transposing butterfly: each step a lane keeps half of its values and
// sends the other half to its partner; lane l ends with value l / SDPA_DUP's total.
inline float sdpa_scores(thread float* d, uint lane) {
    int n = SDPA_NV;
    ushort w = 16;
    for (; n > 1; w /= 2) {
        n /= 2;
        bool hi = (lane & w) != 0;
        for (int i = 0; i < n; i++) {
            float keep = hi ? d[i + n] : d[i];
            float send = hi ? d[i] : d[i + n];
            d[i] = keep + simd_shuffle_xor(send, w);
        }
    }
    float t = d[0];
    for (; w > 0; w /= 2) {
        t += simd_shuffle_xor(t, w);
    }
    return t;
}

// sdpa_step folds keys j .. j + SDPA_KB - 1 (kv, vv) into each head's online softmax:
// the lane's head's running max ml and its partial sum lw of that head's weights (the
// lanes of a head hold the same ml), and the value rows acc of every head.
inline void sdpa_step(thread const SDPAKeys& s, int j, thread float (*qv)[SDPA_MAXC],
                      thread float (*acc)[SDPA_MAXC], thread float& ml, thread float& lw, uint lane,
                      thread float (*kv)[SDPA_MAXC], thread float (*vv)[SDPA_MAXC]) {
    float d[SDPA_NV];
    for (int u = 0; u < SDPA_KB; u++) {
        for (int hh = 0; hh < SDPA_MAXG; hh++) {
            float t = 0.0f;
            for (int c = 0; c < SDPA_MAXC; c++) {
                t = fma(qv[hh][c], kv[u][c], t);
            }
            d[u * SDPA_MAXG + hh] = t;
        }
    }
    // This lane's (key, head) score.
    int vi = int(lane) / SDPA_DUP;
    int h = vi % SDPA_MAXG;
    int ju = j + vi / SDPA_MAXG;
    float sc = sdpa_scores(d, lane) * s.scale;
    bool ok = ju < s.j1;
    if (s.masked && ok) {
        ok = s.mr[size_t(min(h, s.nh - 1)) * s.mh + size_t(ju) * s.mk] != 0;
    }
    sc = ok ? sc : -INFINITY;
    // The head's largest score of the step (its lanes differ in the key bits of the lane
    // index and in the SDPA_DUP copies); the max moves only past ml + SDPA_LAZY.
    float bm = sc;
    for (ushort w = 16; w >= SDPA_DUP * SDPA_MAXG; w /= 2) {
        bm = max(bm, simd_shuffle_xor(bm, w));
    }
    bool up = bm > ml + SDPA_LAZY;
    float f = up ? exp(ml - bm) : 1.0f;
    ml = up ? bm : ml;
    float w = ok ? exp(sc - ml) : 0.0f;
    lw = fma(lw, f, w);
    for (int hh = 0; hh < SDPA_MAXG; hh++) {
        float fh = simd_shuffle(f, ushort(hh * SDPA_DUP));
        if (fh != 1.0f) {  // uniform: head hh's max moved
            for (int c = 0; c < SDPA_MAXC; c++) {
                acc[hh][c] *= fh;
            }
        }
    }
    // Each (key, head) weight to every lane, then the value rows. A weight of 0 (a masked
    // key, uniform) adds nothing: its value row (perhaps never written) is skipped.
    for (int u = 0; u < SDPA_KB; u++) {
        for (int hh = 0; hh < SDPA_MAXG; hh++) {
            float wv = simd_shuffle(w, ushort((u * SDPA_MAXG + hh) * SDPA_DUP));
            if (wv != 0.0f) {
                for (int c = 0; c < SDPA_MAXC; c++) {
                    acc[hh][c] = fma(wv, vv[u][c], acc[hh][c]);
                }
            }
        }
    }
}

kernel void sdpa_float32(const device float* q [[buffer(0)]], const device float* k [[buffer(1)]],
                         const device float* v [[buffer(2)]], const device uchar* mask [[buffer(3)]],
                         device float* out [[buffer(4)]], constant SdpaConsts& p [[buffer(5)]],
                         device float* part [[buffer(6)]],
                         uint3 gid [[threadgroup_position_in_grid]],
                         uint tid [[thread_index_in_threadgroup]],
                         uint lane [[thread_index_in_simdgroup]],
                         uint sg [[simdgroup_index_in_threadgroup]],
                         uint nsg [[simdgroups_per_threadgroup]]) {
    threadgroup float tg_max[SDPA_SG * SDPA_MAXG];
    threadgroup float tg_sum[SDPA_SG * SDPA_MAXG];
    threadgroup float tg_acc[SDPA_SG * SDPA_MAXG * SDPA_MAXD];
    int G = p.Hq / p.Hkv;
    int ng = (G + SDPA_MAXG - 1) / SDPA_MAXG;
    int hc = int(gid.x) % ng;
    int split = int(gid.x) / ng % p.splits;
    int i = int(gid.x) / ng / p.splits;
    int kvh = int(gid.y);
    int b = int(gid.z);
    if (i >= p.Sq || kvh >= p.Hkv || b >= p.B) {
        return;
    }
    int h0 = kvh * G + hc * SDPA_MAXG;
    int nh = min(SDPA_MAXG, G - hc * SDPA_MAXG);  // heads of this threadgroup; the rest repeat the last
    int j0 = split * p.chunk;
    SDPAKeys s;
    s.k = k + size_t(b) * size_t(p.k_strides[0]) + size_t(kvh) * size_t(p.k_strides[1]);
    s.v = v + size_t(b) * size_t(p.v_strides[0]) + size_t(kvh) * size_t(p.v_strides[1]);
    s.mr = mask + size_t(b) * size_t(p.m_strides[0]) + size_t(h0) * size_t(p.m_strides[1]) +
           size_t(i) * size_t(p.m_strides[2]);
    s.ks = size_t(p.k_strides[2]);
    s.vs = size_t(p.v_strides[2]);
    s.mh = size_t(p.m_strides[1]);
    s.mk = size_t(p.m_strides[3]);
    s.D = p.D;
    s.Dv = p.Dv;
    s.j1 = min(j0 + p.chunk, p.Skv);
    s.nh = nh;
    s.scale = p.scale;
    s.masked = p.has_mask != 0;

    float qv[SDPA_MAXG][SDPA_MAXC];
    float acc[SDPA_MAXG][SDPA_MAXC];
    for (int hh = 0; hh < SDPA_MAXG; hh++) {
        int h = h0 + min(hh, nh - 1);
        size_t row = (size_t(b) * size_t(p.Hq) + size_t(h)) * size_t(p.Sq) + size_t(i);
        for (int c = 0; c < SDPA_MAXC; c++) {
            int d = int(lane) + 32 * c;
            qv[hh][c] = d < s.D ? q[row * size_t(s.D) + size_t(d)] : 0.0f;
            acc[hh][c] = 0.0f;
        }
    }
    float ml = -INFINITY;
    float lw = 0.0f;
    // j is the same for every lane of a simdgroup, so the branches are uniform.
    // Two buffers of keys: the next step's are loaded before this step's are used, so a
    // simdgroup always has a step's loads in flight while it computes.
    int step = int(nsg) * SDPA_KB;
    float ka[SDPA_KB][SDPA_MAXC];
    float va[SDPA_KB][SDPA_MAXC];
    float kn[SDPA_KB][SDPA_MAXC];
    float vn[SDPA_KB][SDPA_MAXC];
    sdpa_load_keys(s, j0 + int(sg) * SDPA_KB, lane, ka, va);
    for (int j = j0 + int(sg) * SDPA_KB; j < s.j1; j += 2 * step) {
        sdpa_load_keys(s, j + step, lane, kn, vn);
        sdpa_step(s, j, qv, acc, ml, lw, lane, ka, va);
        if (j + step >= s.j1) {
            break;
        }
        sdpa_load_keys(s, j + 2 * step, lane, ka, va);
        sdpa_step(s, j + step, qv, acc, ml, lw, lane, kn, vn);
    }
    // Each head's max and sum (of its lanes' partials, one copy of each (key, head)).
    float m[SDPA_MAXG];
    float l[SDPA_MAXG];
    float ls = lane % SDPA_DUP == 0 ? lw : 0.0f;
    for (ushort w = 16; w > 0; w /= 2) {
        if ((w & ushort(SDPA_MAXG * SDPA_DUP - 1)) == 0 || w < SDPA_DUP) {
            ls += simd_shuffle_xor(ls, w);
        }
    }
    for (int hh = 0; hh < SDPA_MAXG; hh++) {
        m[hh] = simd_shuffle(ml, ushort(hh * SDPA_DUP));
        l[hh] = simd_shuffle(ls, ushort(hh * SDPA_DUP));
    }

    for (int hh = 0; hh < SDPA_MAXG; hh++) {
        if (lane == 0) {
            tg_max[sg * SDPA_MAXG + hh] = m[hh];
            tg_sum[sg * SDPA_MAXG + hh] = l[hh];
        }
        for (int c = 0; c < SDPA_MAXC; c++) {
            int d = int(lane) + 32 * c;
            if (d < p.Dv) {
                tg_acc[(sg * SDPA_MAXG + hh) * SDPA_MAXD + d] = acc[hh][c];
            }
        }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);

    for (int hh = 0; hh < nh; hh++) {
        size_t row = (size_t(b) * size_t(p.Hq) + size_t(h0 + hh)) * size_t(p.Sq) + size_t(i);
        float gm = -INFINITY;
        for (int g = 0; g < int(nsg); g++) {
            gm = max(gm, tg_max[g * SDPA_MAXG + hh]);
        }
        float wg[SDPA_SG];  // the first nsg are used
        float total = 0.0f;
        for (int g = 0; g < int(nsg); g++) {
            wg[g] = gm == -INFINITY ? 0.0f : exp(tg_max[g * SDPA_MAXG + hh] - gm);
            total += tg_sum[g * SDPA_MAXG + hh] * wg[g];
        }
        device float* orow = out + row * size_t(p.Dv);
        float inv = gm == -INFINITY ? 0.0f : 1.0f / total;
        if (p.splits > 1) {
            if (tid == 0) {
                device float* ml = sdpa_ml(part, row, split, p);
                ml[0] = gm;
                ml[1] = total;
            }
            orow = sdpa_acc(part, row, split, p);
            inv = 1.0f;
        }
        for (int d = int(tid); d < p.Dv; d += 32 * int(nsg)) {
            float o = 0.0f;
            for (int g = 0; g < int(nsg); g++) {
                o += tg_acc[(g * SDPA_MAXG + hh) * SDPA_MAXD + d] * wg[g];
            }
            orow[d] = o * inv;
        }
    }
}

// sdpa_combine_float32 merges the splits of sdpa_float32: one threadgroup of
// SDPA_COMBINE_SG simdgroups (or fewer, nsg) per (32 value elements, query row); grid
// (ceil(Dv / 32), Sq * Hq * B). The threadgroup finds the largest split max; then
// simdgroup g adds splits g, g + SDPA_COMBINE_SG, ..., SDPA_COMBINE_U of them per
// step with their loads in flight together, lane l value element l of the group's 32;
// the simdgroups' sums are added in order.
#define SDPA_COMBINE_U 8

kernel void sdpa_combine_float32(device float* out [[buffer(4)]], constant SdpaConsts& p [[buffer(5)]],
                                 device float* part [[buffer(6)]],
                                 uint3 gid [[threadgroup_position_in_grid]],
                                 uint tid [[thread_index_in_threadgroup]],
                                 uint lane [[thread_index_in_simdgroup]],
                                 uint sg [[simdgroup_index_in_threadgroup]],
                                 uint nsg [[simdgroups_per_threadgroup]]) {
    threadgroup float tg_m[SDPA_COMBINE_SG];
    threadgroup float tg_o[SDPA_COMBINE_SG * 32];
    threadgroup float tg_l[SDPA_COMBINE_SG * 32];
    size_t row = size_t(gid.y);
    int d = int(gid.x) * 32 + int(lane);
    float gm = -INFINITY;
    for (int s = int(tid); s < p.splits; s += 32 * int(nsg)) {
        gm = max(gm, sdpa_ml(part, row, s, p)[0]);
    }
    for (ushort k = 16; k > 0; k >>= 1) {
        gm = max(gm, simd_shuffle_xor(gm, k));
    }
    if (lane == 0) {
        tg_m[sg] = gm;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (int g = 0; g < int(nsg); g++) {
        gm = max(gm, tg_m[g]);
    }
    float o = 0.0f;
    float l = 0.0f;
    if (gm != -INFINITY) {
        int dc = min(d, p.Dv - 1);
        for (int s0 = int(sg); s0 < p.splits; s0 += int(nsg) * SDPA_COMBINE_U) {
            float ms[SDPA_COMBINE_U];
            float ls[SDPA_COMBINE_U];
            float as[SDPA_COMBINE_U];
            for (int q = 0; q < SDPA_COMBINE_U; q++) {
                int sc = min(s0 + q * int(nsg), p.splits - 1);
                const device float* ml = sdpa_ml(part, row, sc, p);
                ms[q] = ml[0];
                ls[q] = ml[1];
                as[q] = sdpa_acc(part, row, sc, p)[dc];
            }
            for (int q = 0; q < SDPA_COMBINE_U; q++) {
                if (s0 + q * int(nsg) < p.splits) {
                    float w = exp(ms[q] - gm);
                    l += ls[q] * w;
                    o += as[q] * w;
                }
            }
        }
    }
    tg_o[sg * 32 + lane] = o;
    tg_l[sg * 32 + lane] = l;
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (sg == 0 && d < p.Dv) {
        float to = 0.0f;
        float tl = 0.0f;
        for (int g = 0; g < int(nsg); g++) {
            to += tg_o[g * 32 + lane];
            tl += tg_l[g * 32 + lane];
        }
        out[row * size_t(p.Dv) + size_t(d)] = gm == -INFINITY ? 0.0f : to / tl;
    }
}
