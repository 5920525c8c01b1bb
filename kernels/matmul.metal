// matmul family: out[b, m, n] = dot(x[b] row m, w[b] row n), rows dense and K long.
// One thread per output element. The dot uses the catalog's fixed order: four float
// lanes over k mod 4, the tail into lane 0, then (l0 + l1) + (l2 + l3), so the Go twin
// and this twin add the same products in the same order.
#include "prelude.metal"

template <typename T>
inline void linear_impl(const device T* x, const device T* w, device T* out,
                        constant MatmulParams& p, uint3 gid) {
    int n = int(gid.x), m = int(gid.y), b = int(gid.z);
    if (n >= p.n || m >= p.m || b >= p.batch) {
        return;
    }
    const device T* xr = x + b * p.x_stride + m * p.k;
    const device T* wr = w + b * p.w_stride + n * p.k;
    out[(b * p.m + m) * p.n + n] = T(fixed_dot(xr, wr, p.k));
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
