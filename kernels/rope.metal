// rope family: rotary position embeddings with rotate-half (NeoX) pairing on the first
// `dims` dims of each head of a contiguous float32 [B, H, S, D] input. Grid
// (D - dims/2, S, B*H): thread x < dims/2 rotates the pair (x, x + dims/2), the rest copy
// one passed-through element. The angle is computed in float as MLX does:
// theta = float(offsets[b] + s) * inv_freq[i], with inv_freq[i] = base^(-2i/dims) computed
// once on the host (the Go twin uses the same float32 values, so both rotate by the same
// angle). Each thread reads what it writes, so out may alias x.
#include "prelude.metal"

kernel void rope_float32(const device float* x [[buffer(0)]], const device int* offsets [[buffer(1)]],
                         device float* out [[buffer(2)]], constant RopeConsts& p [[buffer(3)]],
                         constant float* inv_freq [[buffer(4)]],
                         uint3 gid [[thread_position_in_grid]]) {
    int half_dims = p.dims / 2;
    int slot = int(gid.x);
    int s = int(gid.y);
    int bh = int(gid.z);
    if (slot >= p.D - half_dims || s >= p.S || bh >= p.B * p.H) {
        return;
    }
    size_t base = (size_t(bh) * size_t(p.S) + size_t(s)) * size_t(p.D);
    if (slot >= half_dims) {
        size_t d = base + size_t(p.dims + slot - half_dims);
        out[d] = x[d];
        return;
    }
    float pos = float(offsets[bh / p.H] + s);
    float theta = pos * inv_freq[slot];
    // precise: fast sin/cos lose accuracy for the large angles of late positions.
    float c = precise::cos(theta);
    float sn = precise::sin(theta);
    float x1 = x[base + slot];
    float x2 = x[base + slot + half_dims];
    out[base + slot] = x1 * c - x2 * sn;
    out[base + slot + half_dims] = x1 * sn + x2 * c;
}
