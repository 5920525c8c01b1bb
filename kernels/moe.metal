// moe family: SwitchGLU over float32 experts, in two passes over the launch's scratch
// act [T, k, I] (as quant's qswitch_glu):
// switch_glu_act_float32: a threadgroup computes MOE_ROWS rows i of one routed expert e
// of token t: act = silu(gate_e[i] . x_t) * (up_e[i] . x_t); grid (ceil(I / MOE_ROWS),
// T * k). Thread tid takes elements tid, tid + nthr, ... of the rows (a simdgroup reads
// 32 consecutive floats of each row), each x value loaded once for the 2 * MOE_ROWS rows.
// switch_glu_down_float32: a threadgroup computes MOE_ROWS outputs h of token t, the sum
// over the experts j of s_j * (down_e[h] . act_j); its threads share the (expert,
// element) pairs; grid (ceil(H / MOE_ROWS), T). Each weight is read once per token, as
// the Go twin does; the partial sums are added over each simdgroup (simd_sum), then
// across the simdgroups in order: the Go twin's sums in another order, within the
// catalog's tolerance. An index outside [-E, E) contributes nothing (negative ones wrap).
#include "prelude.metal"

#define MOE_ROWS 8
#define MOE_MAXSG 8

// moe_expert wraps a negative expert index; -1 for one out of range.
inline int moe_expert(int e, int E) {
    if (e < 0) e += E;
    return (e >= 0 && e < E) ? e : -1;
}

// moe_reduce adds each of the n partial sums a over the threadgroup (nsg simdgroups):
// simd_sum, then the simdgroups in order through part. Thread r < n gets sum r.
inline float moe_reduce(thread float* a, int n, threadgroup float* part, uint tid, uint lane, uint sg,
                        uint nsg) {
    for (int r = 0; r < n; r++) {
        float v = simd_sum(a[r]);
        if (lane == 0) {
            part[sg * uint(n) + uint(r)] = v;
        }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float y = 0.0f;
    if (int(tid) < n) {
        for (uint g = 0; g < nsg; g++) {
            y += part[g * uint(n) + tid];
        }
    }
    return y;
}

kernel void switch_glu_act_float32(const device float* x [[buffer(0)]],
                                   const device float* gate [[buffer(1)]],
                                   const device float* up [[buffer(2)]],
                                   const device int* idx [[buffer(4)]],
                                   constant SwitchGLUParams& p [[buffer(7)]],
                                   device float* act [[buffer(8)]],
                                   uint3 tg [[threadgroup_position_in_grid]],
                                   uint tid [[thread_index_in_threadgroup]],
                                   uint lane [[thread_index_in_simdgroup]],
                                   uint sg [[simdgroup_index_in_threadgroup]],
                                   uint3 tpg [[threads_per_threadgroup]]) {
    threadgroup float part[2 * MOE_ROWS * MOE_MAXSG];
    int i0 = int(tg.x) * MOE_ROWS;
    int tj = int(tg.y);  // t * K + j
    int rows = min(MOE_ROWS, p.I - i0);
    if (tj >= p.T * p.K || rows <= 0) {
        return;  // uniform, before any barrier
    }
    int e = moe_expert(idx[tj], p.E);
    float a[2 * MOE_ROWS];  // gate rows, then up rows
    for (int r = 0; r < 2 * MOE_ROWS; r++) {
        a[r] = 0.0f;
    }
    if (e >= 0) {  // uniform: an expert out of range contributes nothing (down skips it)
        int H = p.H;  // in a register, read from the constant buffer once
        const device float* xr = x + size_t(tj / p.K) * size_t(H);
        // 64-bit offsets: all experts' weights can pass 2^31 elements.
        size_t base = (size_t(e) * size_t(p.I) + size_t(i0)) * size_t(H);
        for (int k = int(tid); k < H; k += int(tpg.x)) {
            float xv = xr[k];
            for (int r = 0; r < MOE_ROWS; r++) {
                size_t o = base + size_t(min(r, rows - 1)) * size_t(H) + size_t(k);
                a[r] = fma(xv, gate[o], a[r]);
                a[MOE_ROWS + r] = fma(xv, up[o], a[MOE_ROWS + r]);
            }
        }
    }
    float y = moe_reduce(a, 2 * MOE_ROWS, part, tid, lane, sg, tpg.x / 32);
    // Thread r holds gate row r, thread MOE_ROWS + r up row r: one exchange through part.
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (tid < 2 * MOE_ROWS) {
        part[tid] = y;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (int(tid) < rows) {
        float g = part[tid];
        act[size_t(tj) * size_t(p.I) + size_t(i0) + tid] = (g / (1.0f + exp(-g))) * part[MOE_ROWS + tid];
    }
}

kernel void switch_glu_down_float32(const device float* down [[buffer(3)]],
                                    const device int* idx [[buffer(4)]],
                                    const device float* scores [[buffer(5)]],
                                    device float* out [[buffer(6)]],
                                    constant SwitchGLUParams& p [[buffer(7)]],
                                    const device float* act [[buffer(8)]],
                                    uint3 tg [[threadgroup_position_in_grid]],
                                    uint tid [[thread_index_in_threadgroup]],
                                    uint lane [[thread_index_in_simdgroup]],
                                    uint sg [[simdgroup_index_in_threadgroup]],
                                    uint3 tpg [[threads_per_threadgroup]]) {
    threadgroup float part[MOE_ROWS * MOE_MAXSG];
    int h0 = int(tg.x) * MOE_ROWS;
    int t = int(tg.y);
    int rows = min(MOE_ROWS, p.H - h0);
    if (t >= p.T || rows <= 0) {
        return;  // uniform, before any barrier
    }
    float a[MOE_ROWS];
    for (int r = 0; r < MOE_ROWS; r++) {
        a[r] = 0.0f;
    }
    int K = p.K;  // the sizes in registers, read from the constant buffer once
    int I = p.I;
    int E = p.E;
    int H = p.H;
    for (int it = int(tid); it < K * I; it += int(tpg.x)) {
        int j = it / I;
        int k = it % I;
        int e = moe_expert(idx[t * K + j], E);
        if (e < 0) {
            continue;
        }
        size_t tj = size_t(t) * size_t(K) + size_t(j);
        float av = act[tj * size_t(I) + size_t(k)] * scores[tj];
        size_t base = (size_t(e) * size_t(H) + size_t(h0)) * size_t(I) + size_t(k);
        for (int r = 0; r < MOE_ROWS; r++) {
            a[r] = fma(av, down[base + size_t(min(r, rows - 1)) * size_t(I)], a[r]);
        }
    }
    float y = moe_reduce(a, MOE_ROWS, part, tid, lane, sg, tpg.x / 32);
    if (int(tid) < rows) {
        out[size_t(t) * size_t(p.H) + size_t(h0) + tid] = y;
    }
}
