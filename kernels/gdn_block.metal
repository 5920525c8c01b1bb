// gdn_block family: a Gated DeltaNet layer's decode step, one threadgroup per batch row.
// The row's vectors live in threadgroup memory (h [H], the conv output [C], z and y
// [Hv*Dv], per-head beta and decay); threads stride over channels, heads and state
// rows, with a barrier between phases. Serial sums (a norm's sum of squares) run on one
// thread per row or head, in prelude's fixed_dot order like the Go twin's dots.
//   gdn_conv_step: out[b] = [state[b], Wqkv . rms_norm(x[b])] (zero row if masked)
//   gdn_block:     norm, projections, conv + silu, q/k norm, gated delta step, gated
//                  RMSNorm, out_proj; out packs r [B, H] then the state [B, Hv, Dv, Dk]
#include "prelude.metal"

// The host refuses larger sizes (kernels.GDNBlockFits).
#define GB_MAX_H 1024
#define GB_MAX_C 3072
#define GB_MAX_V 1024
#define GB_MAX_HV 64

// Row maps of the projections (kernels.GDNBlockParams.qkvRow, zRow, baRow).
inline int gb_qkv_row(int c, constant GDNBlockParams& p) {
    if (p.grouped == 0) return c;
    int kd = p.Hk * p.Dk, rdv = p.Hv * p.Dv / p.Hk;
    int w = 2 * p.Dk + 2 * rdv;
    if (c < kd) return c / p.Dk * w + c % p.Dk;
    if (c < 2 * kd) {
        c -= kd;
        return c / p.Dk * w + p.Dk + c % p.Dk;
    }
    c -= 2 * kd;
    return c / rdv * w + 2 * p.Dk + c % rdv;
}

inline int gb_z_row(int j, constant GDNBlockParams& p) {
    if (p.grouped == 0) return j;
    int rdv = p.Hv * p.Dv / p.Hk;
    return j / rdv * (2 * p.Dk + 2 * rdv) + 2 * p.Dk + rdv + j % rdv;
}

inline int gb_ba_row(int h, int ofs, constant GDNBlockParams& p) {
    if (p.grouped == 0) return h;
    int r = p.Hv / p.Hk;
    return h / r * 2 * r + ofs * r + h % r;
}

// gb_norm_input writes rms_norm(x row, w) into h; every thread returns after it.
inline void gb_norm_input(const device float* xr, const device float* w, threadgroup float* h,
                          threadgroup float* scale, constant GDNBlockParams& p, uint tid, uint ntg) {
    for (int i = int(tid); i < p.H; i += int(ntg)) {
        h[i] = xr[i];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    if (tid == 0) {
        scale[0] = rsqrt(fixed_dot(h, h, p.H) / float(p.H) + p.eps);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
    float s = scale[0];
    for (int i = int(tid); i < p.H; i += int(ntg)) {
        h[i] = h[i] * s * w[i];
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);
}

kernel void gdn_conv_step_float32(const device float* x [[buffer(0)]],
                                  const device float* norm [[buffer(1)]],
                                  const device float* wqkv [[buffer(2)]],
                                  const device float* state [[buffer(3)]],
                                  const device uchar* mask [[buffer(4)]],
                                  device float* out [[buffer(5)]],
                                  constant GDNBlockParams& p [[buffer(6)]],
                                  uint b [[threadgroup_position_in_grid]],
                                  uint tid [[thread_index_in_threadgroup]],
                                  uint ntg [[threads_per_threadgroup]]) {
    threadgroup float h[GB_MAX_H];
    threadgroup float scale[1];
    if (int(b) >= p.B) return;
    const int C = 2 * p.Hk * p.Dk + p.Hv * p.Dv;
    const int rows = p.K - 1;
    size_t in_base = size_t(b) * size_t(rows) * size_t(C);
    size_t out_base = size_t(b) * size_t(p.K) * size_t(C);
    for (int i = int(tid); i < rows * C; i += int(ntg)) {
        out[out_base + size_t(i)] = state[in_base + size_t(i)];
    }
    device float* last = out + out_base + size_t(rows) * size_t(C);
    if (p.masked != 0 && mask[b] == 0) { // the same for the whole threadgroup
        for (int c = int(tid); c < C; c += int(ntg)) {
            last[c] = 0.0f;
        }
        return;
    }
    gb_norm_input(x + size_t(b) * size_t(p.H), norm, h, scale, p, tid, ntg);
    for (int c = int(tid); c < C; c += int(ntg)) {
        last[c] = fixed_dot(h, wqkv + size_t(gb_qkv_row(c, p)) * size_t(p.H), p.H);
    }
}

kernel void gdn_block_float32(const device float* x [[buffer(0)]],
                              const device float* norm [[buffer(1)]],
                              const device float* window [[buffer(2)]],
                              const device float* conv_w [[buffer(3)]],
                              const device float* wz [[buffer(4)]],
                              const device float* wb [[buffer(5)]],
                              const device float* wa [[buffer(6)]],
                              const device float* neg_a [[buffer(7)]],
                              const device float* dt_bias [[buffer(8)]],
                              const device float* state [[buffer(9)]],
                              const device float* gnorm [[buffer(10)]],
                              const device float* wout [[buffer(11)]],
                              const device uchar* mask [[buffer(12)]],
                              device float* out [[buffer(13)]],
                              constant GDNBlockParams& p [[buffer(14)]],
                              uint b [[threadgroup_position_in_grid]],
                              uint tid [[thread_index_in_threadgroup]],
                              uint ntg [[threads_per_threadgroup]]) {
    threadgroup float h[GB_MAX_H];
    threadgroup float conv[GB_MAX_C];
    threadgroup float z[GB_MAX_V];
    threadgroup float y[GB_MAX_V];
    threadgroup float beta[GB_MAX_HV];
    threadgroup float decay[GB_MAX_HV];
    threadgroup float scale[1];
    if (int(b) >= p.B) return;
    const int H = p.H, K = p.K, Dk = p.Dk, Dv = p.Dv;
    const int kd = p.Hk * Dk, vd = p.Hv * Dv;
    const int C = 2 * kd + vd;
    const int ns = p.Hv * Dv * Dk;
    const bool valid = p.masked == 0 || mask[b] != 0;
    gb_norm_input(x + size_t(b) * size_t(H), norm, h, scale, p, tid, ntg);

    // Projections, beta and the log-decay; the conv over the window and silu.
    for (int j = int(tid); j < vd; j += int(ntg)) {
        z[j] = fixed_dot(h, wz + size_t(gb_z_row(j, p)) * size_t(H), H);
    }
    for (int i = int(tid); i < p.Hv; i += int(ntg)) {
        float bi = fixed_dot(h, wb + size_t(gb_ba_row(i, 0, p)) * size_t(H), H);
        float ai = fixed_dot(h, wa + size_t(gb_ba_row(i, 1, p)) * size_t(H), H) + dt_bias[i];
        beta[i] = 1.0f / (1.0f + exp(-bi));
        float sp = ai > 20.0f ? ai : log(1.0f + exp(ai));
        decay[i] = sp * neg_a[i];
    }
    size_t cb = size_t(b) * size_t(K) * size_t(C);
    for (int c = int(tid); c < C; c += int(ntg)) {
        float acc = 0.0f;
        for (int j = 0; j < K; j++) {
            acc += conv_w[c * K + j] * window[cb + size_t(j * C + c)];
        }
        conv[c] = acc / (1.0f + exp(-acc));
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);

    // q and k heads: rms_norm with the constant weights, one thread per head.
    for (int hd = int(tid); hd < 2 * p.Hk; hd += int(ntg)) {
        threadgroup float* row = conv + hd * Dk;
        float s = rsqrt(fixed_dot(row, row, Dk) / float(Dk) + p.qk_eps);
        float w = hd < p.Hk ? p.q_scale : p.k_scale;
        for (int i = 0; i < Dk; i++) {
            row[i] = row[i] * s * w;
        }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);

    // The gated delta step, one thread per state row (head hv, row i).
    device float* st_out = out + size_t(p.B) * size_t(H) + size_t(b) * size_t(ns);
    const device float* st_in = state + size_t(b) * size_t(ns);
    int r = p.Hv / p.Hk;
    for (int ri = int(tid); ri < vd; ri += int(ntg)) {
        int hv = ri / Dv;
        const device float* src = st_in + size_t(ri) * size_t(Dk);
        device float* dst = st_out + size_t(ri) * size_t(Dk);
        if (!valid) {
            for (int i = 0; i < Dk; i++) {
                dst[i] = src[i];
            }
            y[ri] = 0.0f;
            continue;
        }
        threadgroup float* kk = conv + kd + (hv / r) * Dk;
        threadgroup float* qq = conv + (hv / r) * Dk;
        float dcy = exp(decay[hv]);
        for (int i = 0; i < Dk; i++) {
            dst[i] = src[i] * dcy;
        }
        float delta = (conv[2 * kd + ri] - fixed_dot(dst, kk, Dk)) * beta[hv];
        for (int i = 0; i < Dk; i++) {
            dst[i] = dst[i] + delta * kk[i];
        }
        y[ri] = fixed_dot(dst, qq, Dk);
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);

    // Gated RMSNorm per value head, one thread per head.
    for (int hv = int(tid); hv < p.Hv; hv += int(ntg)) {
        threadgroup float* yh = y + hv * Dv;
        float s = rsqrt(fixed_dot(yh, yh, Dv) / float(Dv) + p.eps);
        for (int i = 0; i < Dv; i++) {
            float g = z[hv * Dv + i];
            yh[i] = yh[i] * s * gnorm[i] * (g / (1.0f + exp(-g)));
        }
    }
    threadgroup_barrier(mem_flags::mem_threadgroup);

    for (int o = int(tid); o < H; o += int(ntg)) {
        out[size_t(b) * size_t(H) + size_t(o)] = fixed_dot(wout + size_t(o) * size_t(vd), y, vd);
    }
}
