// prelude: what every kernel family shares. kernels.Source puts it in front of each
// family's file (in place of its `#include "prelude.metal"` line, with #line directives
// so diagnostics keep each file's own line numbers). It includes prelude_params.metal:
// every parameter struct the host sends with setBytes, generated from its Go declaration
// (kernels/params.go says how).
#include <metal_stdlib>
using namespace metal;

#include "prelude_params.metal"

// index_fault records an out-of-range index in the batch's device error word
// (kernels/errword.go): elem is its position in the launch's index array, value the
// index, tag the launch's position in the batch. The earliest launch wins word 0; a
// later launch leaves the rest to it (a batch's launches run in order).
inline void index_fault(device atomic_uint* err, uint tag, uint elem, int value) {
    uint launch = ~tag;
    if (atomic_fetch_max_explicit(&err[0], launch, memory_order_relaxed) > launch) {
        return;
    }
    uint key = ~elem;
    if (atomic_fetch_max_explicit(&err[1], key, memory_order_relaxed) < key) {
        atomic_store_explicit(&err[2], uint(value), memory_order_relaxed);
    }
}

// loc maps a row-major linear index over s.shape to an element index via s.strides.
inline int loc(uint i, constant Strided& s) {
    int idx = 0;
    uint r = i;
    for (int d = s.ndim - 1; d >= 0; d--) {
        int k = int(r % uint(s.shape[d]));
        r /= uint(s.shape[d]);
        idx += k * s.strides[d];
    }
    return idx;
}

// fixed_dot is the catalog's dot in its fixed order: four float lanes over k mod 4, the
// tail into lane 0, then (l0 + l1) + (l2 + l3), so the Go twins add the same products in
// the same order. x and w may be in any address space.
template <typename PX, typename PW>
inline float fixed_dot(PX x, PW w, int k) {
    float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
    int i = 0;
    for (; i + 4 <= k; i += 4) {
        s0 += float(x[i]) * float(w[i]);
        s1 += float(x[i + 1]) * float(w[i + 1]);
        s2 += float(x[i + 2]) * float(w[i + 2]);
        s3 += float(x[i + 3]) * float(w[i + 3]);
    }
    for (; i < k; i++) {
        s0 += float(x[i]) * float(w[i]);
    }
    return (s0 + s1) + (s2 + s3);
}
