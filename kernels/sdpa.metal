// sdpa family: scaled dot-product attention, in two passes over a split of the keys.
//
// sdpa_float32: one threadgroup of SDPA_SG simdgroups per (query row i, split, up to
// SDPA_MAXG query heads of one key/value head); grid (ng * splits * Sq, Hkv, B), where
// ng = ceil(G / SDPA_MAXG) for G = Hq / Hkv. The heads share every key and value row
// the threadgroup loads (grouped-query attention reads the cache once). The split takes
// keys [split * chunk, (split + 1) * chunk); simdgroup g takes SDPA_KB keys at a time
// (g * SDPA_KB, then SDPA_SG * SDPA_KB further on). Lane l holds elements l, l + 32,
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
inline device float* sdpa_ml(device float* part, size_t row, int split, constant SDPAParams& p) {
    return part + 2 * (row * size_t(p.splits) + size_t(split));
}

inline device float* sdpa_acc(device float* part, size_t row, int split, constant SDPAParams& p) {
    size_t rows = size_t(p.B) * size_t(p.Hq) * size_t(p.Sq);
    return part + 2 * rows * size_t(p.splits) + (row * size_t(p.splits) + size_t(split)) * size_t(p.Dv);
}

// sdpa_load_keys loads the key and value rows j .. j + SDPA_KB - 1, zeros from j1 on:
// lane l holds elements l, l + 32, ... of each, zeros past D and Dv (q is zero there
// too, so the dot needs no select). One row pointer a key; each element a load at a
// constant offset from it.
inline void sdpa_load_keys(const device float* kb, const device float* vb, int j, int j1,
                           constant SDPAParams& p, uint lane, thread float (*kv)[SDPA_MAXC],
                           thread float (*vv)[SDPA_MAXC]) {
    for (int u = 0; u < SDPA_KB; u++) {
        bool in = j + u < j1;  // uniform
        int jc = in ? j + u : 0;
        const device float* kr = kb + size_t(jc) * size_t(p.k_strides[2]) + lane;
        const device float* vr = vb + size_t(jc) * size_t(p.v_strides[2]) + lane;
        for (int c = 0; c < SDPA_MAXC; c++) {
            kv[u][c] = in && int(lane) + 32 * c < p.D ? kr[32 * c] : 0.0f;
            vv[u][c] = in && int(lane) + 32 * c < p.Dv ? vr[32 * c] : 0.0f;
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
    float s = d[0];
    for (; w > 0; w /= 2) {
        s += simd_shuffle_xor(s, w);
    }
    return s;
}

// sdpa_pick is a[h] for a lane's own head h (selects: no indexed register array).
inline float sdpa_pick(thread const float* a, int h) {
    float r = a[0];
    for (int hh = 1; hh < SDPA_MAXG; hh++) {
        r = h == hh ? a[hh] : r;
    }
    return r;
}

// sdpa_step folds keys j .. j + SDPA_KB - 1 (kv, vv) into each head's online softmax:
// the running maxes m (uniform), the lane's partial sum lw of its head's weights, the
// value rows acc. mr is the mask row of the first head, the others at m_strides[1]
// from it (heads past nh repeat the last).
inline void sdpa_step(int j, int j1, constant SDPAParams& p, thread float (*qv)[SDPA_MAXC],
                      thread float (*acc)[SDPA_MAXC], thread float* m, thread float& lw,
                      const device uchar* mr, int nh, uint lane, thread float (*kv)[SDPA_MAXC],
                      thread float (*vv)[SDPA_MAXC]) {
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
    float s = sdpa_scores(d, lane) * p.scale;
    bool ok = ju < j1;
    if (p.has_mask && ok) {
        const device uchar* mh = mr + size_t(min(h, nh - 1)) * size_t(p.m_strides[1]);
        ok = mh[size_t(ju) * size_t(p.m_strides[3])] != 0;
    }
    s = ok ? s : -INFINITY;
    // Each head's largest score of the step, on every lane (the lanes of a head differ
    // in the key bits of the lane index and in the SDPA_DUP copies).
    float bm = s;
    for (ushort w = 16; w >= SDPA_DUP * SDPA_MAXG; w /= 2) {
        bm = max(bm, simd_shuffle_xor(bm, w));
    }
    float f[SDPA_MAXG];
    for (int hh = 0; hh < SDPA_MAXG; hh++) {
        float mh = simd_shuffle(bm, ushort(hh * SDPA_DUP));
        f[hh] = 1.0f;
        if (mh > m[hh] + SDPA_LAZY) {  // uniform
            f[hh] = exp(m[hh] - mh);
            m[hh] = mh;
            for (int c = 0; c < SDPA_MAXC; c++) {
                acc[hh][c] *= f[hh];
            }
        }
    }
    float w = ok ? exp(s - sdpa_pick(m, h)) : 0.0f;
    lw = fma(lw, sdpa_pick(f, h), w);
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
                         device float* out [[buffer(4)]], constant SDPAParams& p [[buffer(5)]],
                         device float* part [[buffer(6)]],
                         uint3 gid [[threadgroup_position_in_grid]],
                         uint tid [[thread_index_in_threadgroup]],
                         uint lane [[thread_index_in_simdgroup]],
                         uint sg [[simdgroup_index_in_threadgroup]]) {
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
    const device float* kb = k + size_t(b) * size_t(p.k_strides[0]) + size_t(kvh) * size_t(p.k_strides[1]);
    const device float* vb = v + size_t(b) * size_t(p.v_strides[0]) + size_t(kvh) * size_t(p.v_strides[1]);
    int j0 = split * p.chunk;
    int j1 = min(j0 + p.chunk, p.Skv);

    float qv[SDPA_MAXG][SDPA_MAXC];
    float acc[SDPA_MAXG][SDPA_MAXC];
    float m[SDPA_MAXG];
    for (int hh = 0; hh < SDPA_MAXG; hh++) {
        int h = h0 + min(hh, nh - 1);
        size_t row = (size_t(b) * size_t(p.Hq) + size_t(h)) * size_t(p.Sq) + size_t(i);
        for (int c = 0; c < SDPA_MAXC; c++) {
            int d = int(lane) + 32 * c;
            qv[hh][c] = d < p.D ? q[row * size_t(p.D) + size_t(d)] : 0.0f;
            acc[hh][c] = 0.0f;
        }
        m[hh] = -INFINITY;
    }
    float lw = 0.0f;
    const device uchar* mr = mask + size_t(b) * size_t(p.m_strides[0]) + size_t(h0) * size_t(p.m_strides[1]) +
                             size_t(i) * size_t(p.m_strides[2]);
    // j is the same for every lane of a simdgroup, so the branches are uniform.
    for (int j = j0 + int(sg) * SDPA_KB; j < j1; j += SDPA_SG * SDPA_KB) {
        float kv[SDPA_KB][SDPA_MAXC];
        float vv[SDPA_KB][SDPA_MAXC];
        sdpa_load_keys(kb, vb, j, j1, p, lane, kv, vv);
        sdpa_step(j, j1, p, qv, acc, m, lw, mr, nh, lane, kv, vv);
    }
    // Each head's sum: its lanes' partials, one copy of each (key, head) lane.
    float l[SDPA_MAXG];
    float ls = lane % SDPA_DUP == 0 ? lw : 0.0f;
    for (ushort w = 16; w > 0; w /= 2) {
        if ((w & ushort(SDPA_MAXG * SDPA_DUP - 1)) == 0 || w < SDPA_DUP) {
            ls += simd_shuffle_xor(ls, w);
        }
    }
    for (int hh = 0; hh < SDPA_MAXG; hh++) {
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
        for (int g = 0; g < SDPA_SG; g++) {
            gm = max(gm, tg_max[g * SDPA_MAXG + hh]);
        }
        float wg[SDPA_SG];
        float total = 0.0f;
        for (int g = 0; g < SDPA_SG; g++) {
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
        for (int d = int(tid); d < p.Dv; d += 32 * SDPA_SG) {
            float o = 0.0f;
            for (int g = 0; g < SDPA_SG; g++) {
                o += tg_acc[(g * SDPA_MAXG + hh) * SDPA_MAXD + d] * wg[g];
            }
            orow[d] = o * inv;
        }
    }
}

// sdpa_combine_float32 merges the splits of sdpa_float32: one threadgroup of
// SDPA_COMBINE_SG simdgroups per (32 value elements, query row); grid
// (ceil(Dv / 32), Sq * Hq * B). The threadgroup finds the largest split max; then
// simdgroup g adds splits g, g + SDPA_COMBINE_SG, ..., SDPA_COMBINE_U of them per
// step with their loads in flight together, lane l value element l of the group's 32;
// the simdgroups' sums are added in order.
#define SDPA_COMBINE_U 8

kernel void sdpa_combine_float32(device float* out [[buffer(4)]], constant SDPAParams& p [[buffer(5)]],
                                 device float* part [[buffer(6)]],
                                 uint3 gid [[threadgroup_position_in_grid]],
                                 uint tid [[thread_index_in_threadgroup]],
                                 uint lane [[thread_index_in_simdgroup]],
                                 uint sg [[simdgroup_index_in_threadgroup]]) {
    threadgroup float tg_m[SDPA_COMBINE_SG];
    threadgroup float tg_o[SDPA_COMBINE_SG * 32];
    threadgroup float tg_l[SDPA_COMBINE_SG * 32];
    size_t row = size_t(gid.y);
    int d = int(gid.x) * 32 + int(lane);
    float gm = -INFINITY;
    for (int s = int(tid); s < p.splits; s += 32 * SDPA_COMBINE_SG) {
        gm = max(gm, sdpa_ml(part, row, s, p)[0]);
    }
    for (ushort k = 16; k > 0; k >>= 1) {
        gm = max(gm, simd_shuffle_xor(gm, k));
    }
    if (lane == 0) {
        tg_m[sg] = gm;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (int g = 0; g < SDPA_COMBINE_SG; g++) {
        gm = max(gm, tg_m[g]);
    }
    float o = 0.0f;
    float l = 0.0f;
    if (gm != -INFINITY) {
        int dc = min(d, p.Dv - 1);
        for (int s0 = int(sg); s0 < p.splits; s0 += SDPA_COMBINE_SG * SDPA_COMBINE_U) {
            float ms[SDPA_COMBINE_U];
            float ls[SDPA_COMBINE_U];
            float as[SDPA_COMBINE_U];
            for (int q = 0; q < SDPA_COMBINE_U; q++) {
                int sc = min(s0 + q * SDPA_COMBINE_SG, p.splits - 1);
                const device float* ml = sdpa_ml(part, row, sc, p);
                ms[q] = ml[0];
                ls[q] = ml[1];
                as[q] = sdpa_acc(part, row, sc, p)[dc];
            }
            for (int q = 0; q < SDPA_COMBINE_U; q++) {
                if (s0 + q * SDPA_COMBINE_SG < p.splits) {
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
        for (int g = 0; g < SDPA_COMBINE_SG; g++) {
            to += tg_o[g * 32 + lane];
            tl += tg_l[g * 32 + lane];
        }
        out[row * size_t(p.Dv) + size_t(d)] = gm == -INFINITY ? 0.0f : to / tl;
    }
}
