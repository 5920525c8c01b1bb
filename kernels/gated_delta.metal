// gated_delta family: the Gated DeltaNet recurrence for T steps (T = 1 is decode).
//
// Inputs are dense float32: q, k [B, T, Hk, Dk]; v [B, T, Hv, Dv]; g, beta [B, T, Hv];
// state [B, Hv, Dv, Dk]; mask bool [B, T], read as bytes (any non-zero is true) (read only when p.masked != 0). out packs
// y [B, T, Hv, Dv] and then the new state [B, Hv, Dv, Dk].
//
// One SIMD group of 32 lanes owns one state row (b, h, dv): lane l keeps the row's
// entries l, l+32, l+64, ... (N of them) in registers for all T steps, so each step
// costs two simd_sum reductions and no threadgroup memory or barriers. Entries past Dk
// are held as zeros (their k and q reads are skipped), which is how Dk = 16 or any Dk
// that is not a multiple of 32 runs: the entry with N = ceil(Dk/32) rounded up to 1, 2,
// 4 or 8 is chosen by the host. Threadgroups are (32, rows, 1); grid z = B*Hv, and the
// SIMD groups whose dv falls past Dv return at once (uniformly, so no reduction waits).
#include "prelude.metal"

template <int N>
void gated_delta_rows(const device float* q, const device float* k, const device float* v,
                      const device float* g, const device float* beta,
                      const device float* state, const device uchar* mask, device float* out,
                      constant GatedDeltaConsts& p, int lane, int dv, int bh) {
    if (dv >= p.Dv || bh >= p.B * p.Hv) {
        return;
    }
    const int b = bh / p.Hv;
    const int h = bh % p.Hv;
    const int kh = h / (p.Hv / p.Hk);
    const int row = (bh * p.Dv + dv) * p.Dk;
    device float* y = out;
    device float* state_out = out + p.B * p.T * p.Hv * p.Dv + row;

    float s[N];
    for (int i = 0; i < N; i++) {
        const int c = i * 32 + lane;
        s[i] = c < p.Dk ? state[row + c] : 0.0f;
    }
    for (int t = 0; t < p.T; t++) {
        const int bt = b * p.T + t;
        const int yi = (bt * p.Hv + h) * p.Dv + dv;
        if (p.masked != 0 && mask[bt] == 0) {
            if (lane == 0) {
                y[yi] = 0.0f;
            }
            continue;
        }
        const device float* kt = k + (bt * p.Hk + kh) * p.Dk;
        const device float* qt = q + (bt * p.Hk + kh) * p.Dk;
        const float decay = exp(g[bt * p.Hv + h]);
        const float bb = beta[bt * p.Hv + h];

        float kk[N];
        float part = 0.0f;
        for (int i = 0; i < N; i++) {
            const int c = i * 32 + lane;
            kk[i] = c < p.Dk ? kt[c] : 0.0f;
            s[i] *= decay;
            part += s[i] * kk[i];
        }
        const float kv = simd_sum(part);
        const float delta = (v[yi] - kv) * bb;

        part = 0.0f;
        for (int i = 0; i < N; i++) {
            const int c = i * 32 + lane;
            const float qq = c < p.Dk ? qt[c] : 0.0f;
            s[i] += delta * kk[i];
            part += s[i] * qq;
        }
        const float yv = simd_sum(part);
        if (lane == 0) {
            y[yi] = yv;
        }
    }
    for (int i = 0; i < N; i++) {
        const int c = i * 32 + lane;
        if (c < p.Dk) {
            state_out[c] = s[i];
        }
    }
}

kernel void gated_delta_float32_dk32(const device float* q [[buffer(0)]],
                                     const device float* k [[buffer(1)]],
                                     const device float* v [[buffer(2)]],
                                     const device float* g [[buffer(3)]],
                                     const device float* beta [[buffer(4)]],
                                     const device float* state [[buffer(5)]],
                                     const device uchar* mask [[buffer(6)]],
                                     device float* out [[buffer(7)]],
                                     constant GatedDeltaConsts& p [[buffer(8)]],
                                     uint3 tid [[thread_position_in_grid]],
                                     uint lane [[thread_index_in_simdgroup]]) {
    gated_delta_rows<1>(q, k, v, g, beta, state, mask, out, p, int(lane), int(tid.y), int(tid.z));
}

kernel void gated_delta_float32_dk64(const device float* q [[buffer(0)]],
                                     const device float* k [[buffer(1)]],
                                     const device float* v [[buffer(2)]],
                                     const device float* g [[buffer(3)]],
                                     const device float* beta [[buffer(4)]],
                                     const device float* state [[buffer(5)]],
                                     const device uchar* mask [[buffer(6)]],
                                     device float* out [[buffer(7)]],
                                     constant GatedDeltaConsts& p [[buffer(8)]],
                                     uint3 tid [[thread_position_in_grid]],
                                     uint lane [[thread_index_in_simdgroup]]) {
    gated_delta_rows<2>(q, k, v, g, beta, state, mask, out, p, int(lane), int(tid.y), int(tid.z));
}

kernel void gated_delta_float32_dk128(const device float* q [[buffer(0)]],
                                      const device float* k [[buffer(1)]],
                                      const device float* v [[buffer(2)]],
                                      const device float* g [[buffer(3)]],
                                      const device float* beta [[buffer(4)]],
                                      const device float* state [[buffer(5)]],
                                      const device uchar* mask [[buffer(6)]],
                                      device float* out [[buffer(7)]],
                                      constant GatedDeltaConsts& p [[buffer(8)]],
                                      uint3 tid [[thread_position_in_grid]],
                                      uint lane [[thread_index_in_simdgroup]]) {
    gated_delta_rows<4>(q, k, v, g, beta, state, mask, out, p, int(lane), int(tid.y), int(tid.z));
}

kernel void gated_delta_float32_dk256(const device float* q [[buffer(0)]],
                                      const device float* k [[buffer(1)]],
                                      const device float* v [[buffer(2)]],
                                      const device float* g [[buffer(3)]],
                                      const device float* beta [[buffer(4)]],
                                      const device float* state [[buffer(5)]],
                                      const device uchar* mask [[buffer(6)]],
                                      device float* out [[buffer(7)]],
                                      constant GatedDeltaConsts& p [[buffer(8)]],
                                      uint3 tid [[thread_position_in_grid]],
                                      uint lane [[thread_index_in_simdgroup]]) {
    gated_delta_rows<8>(q, k, v, g, beta, state, mask, out, p, int(lane), int(tid.y), int(tid.z));
}
