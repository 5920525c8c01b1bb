// sdpa family: scaled dot-product attention, one threadgroup of SDPA_SG simdgroups per
// query row (b, h, i); grid (Sq, Hq, B). Simdgroup g takes keys j = g, g + SDPA_SG, ...;
// lane l holds elements l, l + 32, ... of the query, key and value rows (D, Dv <= 256),
// so one simd_sum gives a score. Each simdgroup keeps an online softmax (running max,
// sum and weighted value row); the partials are merged through threadgroup memory.
// q is contiguous; k and v have a unit stride on the last axis and any other strides;
// the bool mask (true = attend) has any strides. A row with no attended key outputs 0.
#include "prelude.metal"

#define SDPA_SG 4
#define SDPA_MAXD 256
#define SDPA_MAXC (SDPA_MAXD / 32)

kernel void sdpa_float32(const device float* q [[buffer(0)]], const device float* k [[buffer(1)]],
                         const device float* v [[buffer(2)]], const device uchar* mask [[buffer(3)]],
                         device float* out [[buffer(4)]], constant SDPAParams& p [[buffer(5)]],
                         uint3 gid [[threadgroup_position_in_grid]],
                         uint tid [[thread_index_in_threadgroup]],
                         uint lane [[thread_index_in_simdgroup]],
                         uint sg [[simdgroup_index_in_threadgroup]]) {
    threadgroup float tg_max[SDPA_SG];
    threadgroup float tg_sum[SDPA_SG];
    threadgroup float tg_acc[SDPA_SG * SDPA_MAXD];
    int i = int(gid.x);
    int h = int(gid.y);
    int b = int(gid.z);
    if (i >= p.Sq || h >= p.Hq || b >= p.B) {
        return;
    }
    int kvh = h / (p.Hq / p.Hkv);
    size_t row = (size_t(b) * size_t(p.Hq) + size_t(h)) * size_t(p.Sq) + size_t(i);
    const device float* qr = q + row * size_t(p.D);
    const device float* kb = k + size_t(b) * size_t(p.k_strides[0]) + size_t(kvh) * size_t(p.k_strides[1]);
    const device float* vb = v + size_t(b) * size_t(p.v_strides[0]) + size_t(kvh) * size_t(p.v_strides[1]);
    const device uchar* mr = mask + size_t(b) * size_t(p.m_strides[0]) + size_t(h) * size_t(p.m_strides[1]) +
                            size_t(i) * size_t(p.m_strides[2]);
    int nc = (p.D + 31) / 32;
    int ncv = (p.Dv + 31) / 32;

    float qv[SDPA_MAXC];
    float acc[SDPA_MAXC];
    for (int c = 0; c < SDPA_MAXC; c++) {
        int d = int(lane) + 32 * c;
        qv[c] = (c < nc && d < p.D) ? qr[d] : 0.0f;
        acc[c] = 0.0f;
    }
    float m = -INFINITY;
    float l = 0.0f;
    // j is the same for every lane of a simdgroup, so the branches below are uniform.
    for (int j = int(sg); j < p.Skv; j += SDPA_SG) {
        if (p.has_mask && mr[size_t(j) * size_t(p.m_strides[3])] == 0) {
            continue;
        }
        const device float* kr = kb + size_t(j) * size_t(p.k_strides[2]);
        float part = 0.0f;
        for (int c = 0; c < nc; c++) {
            int d = int(lane) + 32 * c;
            if (d < p.D) {
                part += qv[c] * kr[d];
            }
        }
        float s = simd_sum(part) * p.scale;
        float mn = max(m, s);
        float f = exp(m - mn);
        float w = exp(s - mn);
        l = l * f + w;
        const device float* vr = vb + size_t(j) * size_t(p.v_strides[2]);
        for (int c = 0; c < ncv; c++) {
            int d = int(lane) + 32 * c;
            if (d < p.Dv) {
                acc[c] = acc[c] * f + w * vr[d];
            }
        }
        m = mn;
    }

    if (lane == 0) {
        tg_max[sg] = m;
        tg_sum[sg] = l;
    }
    for (int c = 0; c < ncv; c++) {
        int d = int(lane) + 32 * c;
        if (d < p.Dv) {
            tg_acc[sg * SDPA_MAXD + d] = acc[c];
        }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);

    float gm = -INFINITY;
    for (int g = 0; g < SDPA_SG; g++) {
        gm = max(gm, tg_max[g]);
    }
    device float* orow = out + row * size_t(p.Dv);
    if (gm == -INFINITY) {
        for (int d = int(tid); d < p.Dv; d += 32 * SDPA_SG) {
            orow[d] = 0.0f;
        }
        return;
    }
    float wg[SDPA_SG];
    float total = 0.0f;
    for (int g = 0; g < SDPA_SG; g++) {
        wg[g] = exp(tg_max[g] - gm);
        total += tg_sum[g] * wg[g];
    }
    float inv = 1.0f / total;
    for (int d = int(tid); d < p.Dv; d += 32 * SDPA_SG) {
        float o = 0.0f;
        for (int g = 0; g < SDPA_SG; g++) {
            o += tg_acc[g * SDPA_MAXD + d] * wg[g];
        }
        orow[d] = o * inv;
    }
}
