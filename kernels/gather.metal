// gather family: take, take_along_axis (bit copies, one entry per element width) and
// gather_mm (one expert matrix per (row, slot), float32 and float16).
// Index rule (same as the Go twin): i in [0, n) selects i, i in [-n, 0) selects i + n,
// anything else selects nothing, writes zero bits and is reported in the batch's error
// word (kernels/errword.go), where the Go twin stops with a LaunchError.
#include "prelude.metal"

// gather_index resolves i against an axis of length n, or returns -1.
inline int gather_index(int i, int n) {
    if (i < 0) {
        i += n;
    }
    return (i >= 0 && i < n) ? i : -1;
}

// out[o, j, i] = a[o, idx[j], i]; thread (i, j, o).
template <typename T>
inline void take_impl(const device T* a, const device int* idx, device T* out,
                      constant TakeParams& p, device atomic_uint* err, uint tag, uint3 gid) {
    int i = int(gid.x), j = int(gid.y), r = int(gid.z);
    if (i >= p.inner || j >= p.nidx || r >= p.outer) {
        return;
    }
    int k = gather_index(idx[j], p.axis);
    if (k < 0) {
        index_fault(err, tag, uint(j), idx[j]);
    }
    size_t dst = (size_t(r) * size_t(p.nidx) + size_t(j)) * size_t(p.inner) + size_t(i);
    out[dst] = k < 0 ? T(0) : a[(size_t(r) * size_t(p.axis) + size_t(k)) * size_t(p.inner) + size_t(i)];
}

// out[o, j, i] = a[o, idx[o, j, i], i]; thread (i, j, o).
template <typename T>
inline void take_along_impl(const device T* a, const device int* idx, device T* out,
                            constant TakeAlongParams& p, device atomic_uint* err, uint tag, uint3 gid) {
    int i = int(gid.x), j = int(gid.y), r = int(gid.z);
    if (i >= p.inner || j >= p.m || r >= p.outer) {
        return;
    }
    size_t dst = (size_t(r) * size_t(p.m) + size_t(j)) * size_t(p.inner) + size_t(i);
    int k = gather_index(idx[dst], p.axis);
    if (k < 0) {
        index_fault(err, tag, uint(dst), idx[dst]);
    }
    out[dst] = k < 0 ? T(0) : a[(size_t(r) * size_t(p.axis) + size_t(k)) * size_t(p.inner) + size_t(i)];
}

kernel void take_b32(const device uint* a [[buffer(0)]],
                     const device int* idx [[buffer(1)]],
                     device uint* out [[buffer(2)]],
                     constant TakeParams& p [[buffer(3)]],
                     device atomic_uint* err [[buffer(4)]],
                     constant uint& tag [[buffer(5)]],
                     uint3 gid [[thread_position_in_grid]]) {
    take_impl(a, idx, out, p, err, tag, gid);
}

kernel void take_b16(const device ushort* a [[buffer(0)]],
                     const device int* idx [[buffer(1)]],
                     device ushort* out [[buffer(2)]],
                     constant TakeParams& p [[buffer(3)]],
                     device atomic_uint* err [[buffer(4)]],
                     constant uint& tag [[buffer(5)]],
                     uint3 gid [[thread_position_in_grid]]) {
    take_impl(a, idx, out, p, err, tag, gid);
}

kernel void take_b8(const device uchar* a [[buffer(0)]],
                    const device int* idx [[buffer(1)]],
                    device uchar* out [[buffer(2)]],
                    constant TakeParams& p [[buffer(3)]],
                    device atomic_uint* err [[buffer(4)]],
                    constant uint& tag [[buffer(5)]],
                    uint3 gid [[thread_position_in_grid]]) {
    take_impl(a, idx, out, p, err, tag, gid);
}

kernel void take_along_axis_b32(const device uint* a [[buffer(0)]],
                                const device int* idx [[buffer(1)]],
                                device uint* out [[buffer(2)]],
                                constant TakeAlongParams& p [[buffer(3)]],
                                device atomic_uint* err [[buffer(4)]],
                                constant uint& tag [[buffer(5)]],
                                uint3 gid [[thread_position_in_grid]]) {
    take_along_impl(a, idx, out, p, err, tag, gid);
}

kernel void take_along_axis_b16(const device ushort* a [[buffer(0)]],
                                const device int* idx [[buffer(1)]],
                                device ushort* out [[buffer(2)]],
                                constant TakeAlongParams& p [[buffer(3)]],
                                device atomic_uint* err [[buffer(4)]],
                                constant uint& tag [[buffer(5)]],
                                uint3 gid [[thread_position_in_grid]]) {
    take_along_impl(a, idx, out, p, err, tag, gid);
}

kernel void take_along_axis_b8(const device uchar* a [[buffer(0)]],
                               const device int* idx [[buffer(1)]],
                               device uchar* out [[buffer(2)]],
                               constant TakeAlongParams& p [[buffer(3)]],
                               device atomic_uint* err [[buffer(4)]],
                               constant uint& tag [[buffer(5)]],
                               uint3 gid [[thread_position_in_grid]]) {
    take_along_impl(a, idx, out, p, err, tag, gid);
}

// out[t, j, n] = dot(w[idx[t, j]] row n, x row t); thread (n, j, t).
template <typename T>
inline void gather_mm_impl(const device T* x, const device T* w, const device int* idx,
                           device T* out, constant GatherMMParams& p, device atomic_uint* err, uint tag,
                           uint3 gid) {
    int n = int(gid.x), j = int(gid.y), t = int(gid.z);
    if (n >= p.o || j >= p.topk || t >= p.rows) {
        return;
    }
    int e = gather_index(idx[t * p.topk + j], p.experts);
    size_t dst = (size_t(t) * size_t(p.topk) + size_t(j)) * size_t(p.o) + size_t(n);
    if (e < 0) {
        index_fault(err, tag, uint(t * p.topk + j), idx[t * p.topk + j]);
        out[dst] = T(0);
        return;
    }
    // 64-bit offsets: all experts' weights can pass 2^31 elements (512 x 1024 x 4096).
    out[dst] = T(fixed_dot(x + size_t(t) * size_t(p.k), w + (size_t(e) * size_t(p.o) + size_t(n)) * size_t(p.k), p.k));
}

kernel void gather_mm_float32(const device float* x [[buffer(0)]],
                              const device float* w [[buffer(1)]],
                              const device int* idx [[buffer(2)]],
                              device float* out [[buffer(3)]],
                              constant GatherMMParams& p [[buffer(4)]],
                              device atomic_uint* err [[buffer(5)]],
                              constant uint& tag [[buffer(6)]],
                              uint3 gid [[thread_position_in_grid]]) {
    gather_mm_impl(x, w, idx, out, p, err, tag, gid);
}

kernel void gather_mm_float16(const device half* x [[buffer(0)]],
                              const device half* w [[buffer(1)]],
                              const device int* idx [[buffer(2)]],
                              device half* out [[buffer(3)]],
                              constant GatherMMParams& p [[buffer(4)]],
                              device atomic_uint* err [[buffer(5)]],
                              constant uint& tag [[buffer(6)]],
                              uint3 gid [[thread_position_in_grid]]) {
    gather_mm_impl(x, w, idx, out, p, err, tag, gid);
}
