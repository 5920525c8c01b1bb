// sdpa family: scaled dot-product attention, in two passes over a split of the keys.
//
// sdpa_float32: one threadgroup of SDPA_SG simdgroups per (query row i, split, up to
// SDPA_MAXG query heads of one key/value head); grid (ng * splits * Sq, Hkv, B), where
// ng = ceil(G / SDPA_MAXG) for G = Hq / Hkv. The heads share every key and value row
// the threadgroup loads (grouped-query attention reads the cache once). The split takes
// keys [split * chunk, (split + 1) * chunk); simdgroup g takes SDPA_KB keys at a time
// (g * SDPA_KB, then SDPA_SG * SDPA_KB further on), the next step's key and value
// rows loaded before this step's are used (two buffers); lane l holds elements l, l + 32, ... of the rows (D, Dv <= 256),
// so one simd_sum gives a score. Each simdgroup keeps an online softmax per head
// (running max, sum and weighted value row); the partials are merged through
// threadgroup memory. With one split the rows are finished there; otherwise each
// split's max, sum and unnormalized value row go to the launch's scratch and
// sdpa_combine_float32 merges the splits. q is contiguous; k and v have a unit stride
// on the last axis and any other strides; the bool mask (true = attend) has any
// strides. A row with no attended key outputs 0.
#include "prelude.metal"

#define SDPA_SG 4
// One key a step: with the next step's rows in flight, two keys a step (more
// registers, fewer threadgroups a multiprocessor) ran slower on the H200 translation
// (32,768 keys: 91 us against 83; docs/h200/run10-exp4.log).
#define SDPA_KB 1
#define SDPA_MAXG 4
#define SDPA_MAXD 256
#define SDPA_MAXC (SDPA_MAXD / 32)
#define SDPA_COMBINE_SG 16

// sdpa_ml and sdpa_acc are a split's (max, sum) and value row in the scratch: every
// (row, split)'s pair first, then every value row.
inline device float* sdpa_ml(device float* part, size_t row, int split, constant SDPAParams& p) {
    return part + 2 * (row * size_t(p.splits) + size_t(split));
}

inline device float* sdpa_acc(device float* part, size_t row, int split, constant SDPAParams& p) {
    size_t rows = size_t(p.B) * size_t(p.Hq) * size_t(p.Sq);
    return part + 2 * rows * size_t(p.splits) + (row * size_t(p.splits) + size_t(split)) * size_t(p.Dv);
}

// sdpa_load_keys loads the key and value rows j .. j + SDPA_KB - 1 (clamped to j1 - 1,
// zeros from j1 on; what a clamped row holds is dropped by the caller's selects): lane
// l holds elements l, l + 32, ... of each, zeros past D and Dv (q is zero there too,
// so the dot needs no select). One row pointer a key; each element a load at a
// constant offset from it.
inline void sdpa_load_keys(const device float* kb, const device float* vb, int j, int j1,
                           constant SDPAParams& p, uint lane, thread float (*kv)[SDPA_MAXC],
                           thread float (*vv)[SDPA_MAXC]) {
    for (int u = 0; u < SDPA_KB; u++) {
        if (j >= j1) {  // past the split (uniform): nothing to read, perhaps not even row 0
            for (int c = 0; c < SDPA_MAXC; c++) {
                kv[u][c] = 0.0f;
                vv[u][c] = 0.0f;
            }
            continue;
        }
        int jc = min(j + u, j1 - 1);
        const device float* kr = kb + size_t(jc) * size_t(p.k_strides[2]) + lane;
        const device float* vr = vb + size_t(jc) * size_t(p.v_strides[2]) + lane;
        for (int c = 0; c < SDPA_MAXC; c++) {
            kv[u][c] = int(lane) + 32 * c < p.D ? kr[32 * c] : 0.0f;
            vv[u][c] = int(lane) + 32 * c < p.Dv ? vr[32 * c] : 0.0f;
        }
    }
}

// sdpa_step folds keys j .. j + SDPA_KB - 1 (kv, vv) into each head's online softmax
// (running max m, sum l, value row acc); mr is the mask row of the first head, the
// others at m_strides[1] from it (heads past nh repeat the last).
inline void sdpa_step(int j, int j1, constant SDPAParams& p, thread float (*qv)[SDPA_MAXC],
                      thread float (*acc)[SDPA_MAXC], thread float* m, thread float* l, const device uchar* mr,
                      int nh, thread float (*kv)[SDPA_MAXC], thread float (*vv)[SDPA_MAXC]) {
    for (int hh = 0; hh < SDPA_MAXG; hh++) {
        bool ok[SDPA_KB];
        float s[SDPA_KB];
        float mn = m[hh];
        const device uchar* mh = mr + size_t(min(hh, nh - 1)) * size_t(p.m_strides[1]);
        for (int u = 0; u < SDPA_KB; u++) {
            int ju = j + u;
            ok[u] = ju < j1 && (!p.has_mask || mh[size_t(ju) * size_t(p.m_strides[3])] != 0);
            float dot = 0.0f;
            for (int c = 0; c < SDPA_MAXC; c++) {
                dot = fma(qv[hh][c], kv[u][c], dot);
            }
            s[u] = simd_sum(dot) * p.scale;
            if (ok[u]) {
                mn = max(mn, s[u]);
            }
        }
        if (mn == -INFINITY) {
            continue;  // every key of this head so far masked
        }
        float f = exp(m[hh] - mn);
        float w[SDPA_KB];
        float lh = l[hh] * f;
        for (int u = 0; u < SDPA_KB; u++) {
            w[u] = ok[u] ? exp(s[u] - mn) : 0.0f;
            lh += w[u];
        }
        l[hh] = lh;
        for (int c = 0; c < SDPA_MAXC; c++) {
            float a = acc[hh][c] * f;
            for (int u = 0; u < SDPA_KB; u++) {
                a += ok[u] ? w[u] * vv[u][c] : 0.0f;
            }
            acc[hh][c] = a;
        }
        m[hh] = mn;
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
    float l[SDPA_MAXG];
    for (int hh = 0; hh < SDPA_MAXG; hh++) {
        int h = h0 + min(hh, nh - 1);
        size_t row = (size_t(b) * size_t(p.Hq) + size_t(h)) * size_t(p.Sq) + size_t(i);
        for (int c = 0; c < SDPA_MAXC; c++) {
            int d = int(lane) + 32 * c;
            qv[hh][c] = d < p.D ? q[row * size_t(p.D) + size_t(d)] : 0.0f;
            acc[hh][c] = 0.0f;
        }
        m[hh] = -INFINITY;
        l[hh] = 0.0f;
    }
    const device uchar* mr = mask + size_t(b) * size_t(p.m_strides[0]) + size_t(h0) * size_t(p.m_strides[1]) +
                             size_t(i) * size_t(p.m_strides[2]);
    // j is the same for every lane of a simdgroup, so the branches are uniform. Two
    // buffers of keys: the next step's are loaded before this step's are used, so a
    // simdgroup always has a step's loads in flight while it computes.
    int step = SDPA_SG * SDPA_KB;
    float ka[SDPA_KB][SDPA_MAXC];
    float va[SDPA_KB][SDPA_MAXC];
    float kn[SDPA_KB][SDPA_MAXC];
    float vn[SDPA_KB][SDPA_MAXC];
    sdpa_load_keys(kb, vb, j0 + int(sg) * SDPA_KB, j1, p, lane, ka, va);
    for (int j = j0 + int(sg) * SDPA_KB; j < j1; j += 2 * step) {
        sdpa_load_keys(kb, vb, j + step, j1, p, lane, kn, vn);
        sdpa_step(j, j1, p, qv, acc, m, l, mr, nh, ka, va);
        if (j + step >= j1) {
            break;
        }
        sdpa_load_keys(kb, vb, j + 2 * step, j1, p, lane, ka, va);
        sdpa_step(j + step, j1, p, qv, acc, m, l, mr, nh, kn, vn);
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
