// moe_block family: a layer's residual add, RMSNorm and whole sparse-MoE block (or, in
// mlp_block, its dense SwiGLU MLP), one token per threadgroup. The token's vectors live
// in threadgroup memory: x1 then h [H], the routed experts' sum [H], one expert's
// activations [I], the router probabilities [E]. Threads stride over H, E and I; the
// serial parts (sum of squares, softmax, top-k) run on thread 0, which is cheap at these
// widths and keeps one summation order. Dots use the Go twin's fixed order (prelude's
// fixed_dot).
#include "prelude.metal"

// The host refuses larger sizes (kernels.MoEBlockFits).
#define MB_MAX_H 2048
#define MB_MAX_I 2048
#define MB_MAX_E 512
#define MB_MAX_K 64

// mb_before is the top-k order: larger first, ties to the lower index, NaN first.
inline bool mb_before(float a, int ia, float b, int ib) {
    bool na = a != a, nb = b != b;
    if (na || nb) {
        return nb && (!na || ia < ib);
    }
    return a > b || (a == b && ia < ib);
}

inline float mb_silu(float g) { return g / (1.0f + exp(-g)); }

kernel void moe_block_float32(const device float* x [[buffer(0)]],
                              const device float* r [[buffer(1)]],
                              const device float* norm [[buffer(2)]],
                              const device float* router [[buffer(3)]],
                              const device float* gate [[buffer(4)]],
                              const device float* up [[buffer(5)]],
                              const device float* down [[buffer(6)]],
                              const device float* sgate [[buffer(7)]],
                              const device float* sup [[buffer(8)]],
                              const device float* sdown [[buffer(9)]],
                              const device float* sgw [[buffer(10)]],
                              device float* out [[buffer(11)]],
                              constant MoEBlockParams& p [[buffer(12)]],
                              uint t [[threadgroup_position_in_grid]],
                              uint tid [[thread_index_in_threadgroup]],
                              uint ntg [[threads_per_threadgroup]]) {
    threadgroup float h[MB_MAX_H];
    threadgroup float acc[MB_MAX_H];
    threadgroup float act[MB_MAX_I];
    threadgroup float probs[MB_MAX_E];
    threadgroup int sel[MB_MAX_K];
    threadgroup float score[MB_MAX_K];
    threadgroup float scalar[2]; // the norm's scale, then the shared expert's gate
    if (int(t) >= p.T) return;
    const int H = p.H;
    const device float* xr = x + size_t(t) * size_t(H);
    const device float* rr = r + size_t(t) * size_t(H);
    device float* yr = out + size_t(t) * size_t(H);

    for (int i = int(tid); i < H; i += int(ntg)) {
        h[i] = xr[i] + rr[i];
        acc[i] = 0.0f;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (tid == 0) {
        float ss = fixed_dot(h, h, H);
        scalar[0] = rsqrt(ss / float(H) + p.eps);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float s = scalar[0];
    for (int i = int(tid); i < H; i += int(ntg)) {
        h[i] = h[i] * s * norm[i];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);

    // Router logits, then softmax and top-k on thread 0.
    for (int e = int(tid); e < p.E; e += int(ntg)) {
        probs[e] = fixed_dot(h, router + size_t(e) * size_t(H), H);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (tid == 0) {
        float m = probs[0];
        for (int e = 1; e < p.E; e++) {
            m = max(m, probs[e]);
        }
        float sum = 0.0f;
        for (int e = 0; e < p.E; e++) {
            float v = exp(probs[e] - m);
            probs[e] = v;
            sum += v;
        }
        float inv = 1.0f / sum;
        for (int e = 0; e < p.E; e++) {
            probs[e] = probs[e] * inv;
        }
        int cnt = 0;
        for (int e = 0; e < p.E; e++) {
            float v = probs[e];
            if (cnt == p.K && !mb_before(v, e, score[cnt - 1], sel[cnt - 1])) {
                continue;
            }
            int pos = cnt < p.K ? cnt : p.K - 1;
            if (cnt < p.K) {
                cnt++;
            }
            while (pos > 0 && mb_before(v, e, score[pos - 1], sel[pos - 1])) {
                score[pos] = score[pos - 1];
                sel[pos] = sel[pos - 1];
                pos--;
            }
            score[pos] = v;
            sel[pos] = e;
        }
        if (p.renorm) {
            float tot = 0.0f;
            for (int j = 0; j < p.K; j++) {
                tot += score[j];
            }
            for (int j = 0; j < p.K; j++) {
                score[j] = score[j] / tot;
            }
        }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);

    // Routed experts, one after another (the Go twin's order of the sum).
    for (int j = 0; j < p.K; j++) {
        size_t ei = size_t(sel[j]) * size_t(p.I);
        for (int i = int(tid); i < p.I; i += int(ntg)) {
            float g = fixed_dot(h, gate + (ei + size_t(i)) * size_t(H), H);
            float u = fixed_dot(h, up + (ei + size_t(i)) * size_t(H), H);
            act[i] = mb_silu(g) * u;
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
        float sj = score[j];
        size_t eh = size_t(sel[j]) * size_t(H);
        for (int i = int(tid); i < H; i += int(ntg)) {
            acc[i] += fixed_dot(down + (eh + size_t(i)) * size_t(p.I), act, p.I) * sj;
        }
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }

    // The shared expert and its gate.
    for (int i = int(tid); i < p.Is; i += int(ntg)) {
        float g = fixed_dot(h, sgate + size_t(i) * size_t(H), H);
        float u = fixed_dot(h, sup + size_t(i) * size_t(H), H);
        act[i] = mb_silu(g) * u;
    }
    if (tid == 0) {
        scalar[1] = 1.0f / (1.0f + exp(-fixed_dot(h, sgw, H)));
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float gv = scalar[1];
    for (int i = int(tid); i < H; i += int(ntg)) {
        float sh = fixed_dot(sdown + size_t(i) * size_t(p.Is), act, p.Is);
        yr[i] = (xr[i] + rr[i]) + (acc[i] + sh * gv);
    }
}

// mlp_block: a dense layer's residual add, RMSNorm and SwiGLU MLP, one token per
// threadgroup (p.I is the MLP's width).
kernel void mlp_block_float32(const device float* x [[buffer(0)]],
                              const device float* r [[buffer(1)]],
                              const device float* norm [[buffer(2)]],
                              const device float* gate [[buffer(3)]],
                              const device float* up [[buffer(4)]],
                              const device float* down [[buffer(5)]],
                              device float* out [[buffer(6)]],
                              constant MLPBlockParams& p [[buffer(7)]],
                              uint t [[threadgroup_position_in_grid]],
                              uint tid [[thread_index_in_threadgroup]],
                              uint ntg [[threads_per_threadgroup]]) {
    threadgroup float h[MB_MAX_H];
    threadgroup float act[MB_MAX_I];
    threadgroup float scalar[1];
    if (int(t) >= p.T) return;
    const int H = p.H;
    const device float* xr = x + size_t(t) * size_t(H);
    const device float* rr = r + size_t(t) * size_t(H);
    device float* yr = out + size_t(t) * size_t(H);
    for (int i = int(tid); i < H; i += int(ntg)) {
        h[i] = xr[i] + rr[i];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (tid == 0) {
        scalar[0] = rsqrt(fixed_dot(h, h, H) / float(H) + p.eps);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float s = scalar[0];
    for (int i = int(tid); i < H; i += int(ntg)) {
        h[i] = h[i] * s * norm[i];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (int i = int(tid); i < p.I; i += int(ntg)) {
        float g = fixed_dot(h, gate + size_t(i) * size_t(H), H);
        float u = fixed_dot(h, up + size_t(i) * size_t(H), H);
        act[i] = mb_silu(g) * u;
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    for (int i = int(tid); i < H; i += int(ntg)) {
        yr[i] = (xr[i] + rr[i]) + fixed_dot(down + size_t(i) * size_t(p.I), act, p.I);
    }
}
