// topk family: argtopk, the int32 indices of the k largest values of each float32 row,
// best first; ties to the lower index, NaN below every number. One thread per row keeps
// a sorted list of its k best (k <= 64) and inserts each new candidate, as the Go twin.
#include "prelude.metal"

#define TOPK_MAX 64

// topk_before: does value a at index ia rank before value b at index ib?
inline bool topk_before(float a, int ia, float b, int ib) {
    bool na = isnan(a), nb = isnan(b);
    if (na || nb) {
        return nb && (!na || ia < ib);
    }
    return a > b || (a == b && ia < ib);
}

kernel void argtopk_float32(const device float* a [[buffer(0)]],
                            device int* out [[buffer(1)]],
                            constant TopKParams& p [[buffer(2)]],
                            uint gid [[thread_position_in_grid]]) {
    int r = int(gid);
    if (r >= p.rows || p.k < 1 || p.k > TOPK_MAX) {
        return;
    }
    float vals[TOPK_MAX];
    int ids[TOPK_MAX];
    const device float* row = a + r * p.n;
    int cnt = 0;
    for (int i = 0; i < p.n; i++) {
        float v = row[i];
        if (cnt == p.k && !topk_before(v, i, vals[cnt - 1], ids[cnt - 1])) {
            continue;
        }
        int pos = cnt;
        if (cnt < p.k) {
            cnt++;
        } else {
            pos = p.k - 1;
        }
        while (pos > 0 && topk_before(v, i, vals[pos - 1], ids[pos - 1])) {
            vals[pos] = vals[pos - 1];
            ids[pos] = ids[pos - 1];
            pos--;
        }
        vals[pos] = v;
        ids[pos] = i;
    }
    for (int j = 0; j < cnt; j++) {
        out[r * p.k + j] = ids[j];
    }
}
