// moe family: the fused SwitchGLU expert block. One thread per output element (h, t):
// for each routed expert it recomputes the expert activations it needs and
// accumulates s_j * down[e_j][h] . act_j, with the Go twin's dot order (four float
// lanes, summed (l0 + l1) + (l2 + l3), then the tail). Simple, not fast.
#include "prelude.metal"

kernel void switch_glu_float32(const device float* x [[buffer(0)]],
                               const device float* gate [[buffer(1)]],
                               const device float* up [[buffer(2)]],
                               const device float* down [[buffer(3)]],
                               const device int* idx [[buffer(4)]],
                               const device float* scores [[buffer(5)]],
                               device float* out [[buffer(6)]],
                               constant SwitchGLUParams& p [[buffer(7)]],
                               uint2 gid [[thread_position_in_grid]]) {
    int h = int(gid.x);
    int t = int(gid.y);
    if (h >= p.H || t >= p.T) return;
    const device float* xr = x + t * p.H;
    float y = 0.0f;
    for (int j = 0; j < p.K; j++) {
        int e = idx[t * p.K + j];
        if (e < 0) e += p.E;
        if (e < 0 || e >= p.E) continue;
        const device float* dr = down + (e * p.H + h) * p.I;
        // The down row's dot with the activation, in mmDot's order: four lanes over the
        // multiple-of-4 prefix, the tail into lane 0, then (l0 + l1) + (l2 + l3).
        float lane[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        int full = p.I & ~3;
        for (int i = 0; i < p.I; i++) {
            float g = fixed_dot(xr, gate + (e * p.I + i) * p.H, p.H);
            float u = fixed_dot(xr, up + (e * p.I + i) * p.H, p.H);
            float a = (g / (1.0f + exp(-g))) * u;
            lane[i < full ? (i & 3) : 0] += dr[i] * a;
        }
        float d = (lane[0] + lane[1]) + (lane[2] + lane[3]);
        y += d * scores[t * p.K + j];
    }
    out[t * p.H + h] = y;
}
