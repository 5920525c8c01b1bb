// matmul family: out[b, m, n] = dot(x[b] row m, w[b] row n), rows dense and K long.
// One thread per output element. The dot uses the catalog's fixed order: four float
// lanes over k mod 4, the tail into lane 0, then (l0 + l1) + (l2 + l3), so the Go twin
// and this twin add the same products in the same order. Half weights (linear16.go)
// use 16 lanes over k mod 16 instead, folded by halves (lane16_dot).
#include "prelude.metal"

// lane16_dot is the half-weight linear's dot: lane l takes fma(x[k], w[k], lane) for
// k = l mod 16 in order, then lanes l+8, l+4, l+2, l+1 fold onto lane l.
template <typename T>
inline float lane16_dot(const device T* x, const device T* w, int k) {
    float a[16];
    for (int l = 0; l < 16; l++) {
        a[l] = 0.0f;
    }
    for (int i = 0; i < k; i++) {
        a[i & 15] = fma(float(x[i]), float(w[i]), a[i & 15]);
    }
    for (int n = 8; n >= 1; n /= 2) {
        for (int l = 0; l < n; l++) {
            a[l] += a[l + n];
        }
    }
    return a[0];
}

template <typename T>
inline void linear_impl(const device T* x, const device T* w, device T* out,
                        constant MatmulParams& p, uint3 gid) {
    int n = int(gid.x), m = int(gid.y), b = int(gid.z);
    if (n >= p.n || m >= p.m || b >= p.batch) {
        return;
    }
    // 64-bit offsets: a weight can pass 2^31 elements.
    const device T* xr = x + size_t(b) * size_t(p.x_stride) + size_t(m) * size_t(p.k);
    const device T* wr = w + size_t(b) * size_t(p.w_stride) + size_t(n) * size_t(p.k);
    float d = sizeof(T) == 2 ? lane16_dot(xr, wr, p.k) : fixed_dot(xr, wr, p.k);
    out[(size_t(b) * size_t(p.m) + size_t(m)) * size_t(p.n) + size_t(n)] = T(d);
}

kernel void linear_float32(const device float* x [[buffer(0)]],
                           const device float* w [[buffer(1)]],
                           device float* out [[buffer(2)]],
                           constant MatmulParams& p [[buffer(3)]],
                           uint3 gid [[thread_position_in_grid]]) {
    linear_impl(x, w, out, p, gid);
}

kernel void linear_float16(const device half* x [[buffer(0)]],
                           const device half* w [[buffer(1)]],
                           device half* out [[buffer(2)]],
                           constant MatmulParams& p [[buffer(3)]],
                           uint3 gid [[thread_position_in_grid]]) {
    linear_impl(x, w, out, p, gid);
}
