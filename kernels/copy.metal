// copy family: dst[region] = cast(src) between strided layouts of the same shape
// (contiguous copy, slice materialisation, transposition, broadcast, dtype casts;
// concatenate and slice_update are several copies). One thread per element.
#include "prelude.metal"

template <typename S, typename D>
inline void copy_one(const device S* src, device D* dst, constant CopyConsts& p, uint i) {
    if (int(i) >= p.n) return;
    dst[loc(i, p.dst)] = D(src[loc(i, p.src)]);
}

kernel void copy_float32_float32(const device float* src [[buffer(0)]], device float* dst [[buffer(1)]],
                                 constant CopyConsts& p [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    copy_one(src, dst, p, i);
}

kernel void copy_int32_int32(const device int* src [[buffer(0)]], device int* dst [[buffer(1)]],
                             constant CopyConsts& p [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    copy_one(src, dst, p, i);
}

kernel void copy_bool_bool(const device uchar* src [[buffer(0)]], device uchar* dst [[buffer(1)]],
                           constant CopyConsts& p [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    copy_one(src, dst, p, i);
}

kernel void copy_float32_int32(const device float* src [[buffer(0)]], device int* dst [[buffer(1)]],
                               constant CopyConsts& p [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    copy_one(src, dst, p, i);
}

kernel void copy_int32_float32(const device int* src [[buffer(0)]], device float* dst [[buffer(1)]],
                               constant CopyConsts& p [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    copy_one(src, dst, p, i);
}

kernel void copy_bool_float32(const device uchar* src [[buffer(0)]], device float* dst [[buffer(1)]],
                              constant CopyConsts& p [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    dst[loc(i, p.dst)] = src[loc(i, p.src)] != 0 ? 1.0f : 0.0f;
}

kernel void copy_bool_int32(const device uchar* src [[buffer(0)]], device int* dst [[buffer(1)]],
                            constant CopyConsts& p [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    dst[loc(i, p.dst)] = src[loc(i, p.src)] != 0 ? 1 : 0;
}

kernel void copy_float32_bool(const device float* src [[buffer(0)]], device uchar* dst [[buffer(1)]],
                              constant CopyConsts& p [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    dst[loc(i, p.dst)] = src[loc(i, p.src)] != 0.0f ? 1 : 0;
}

kernel void copy_int32_bool(const device int* src [[buffer(0)]], device uchar* dst [[buffer(1)]],
                            constant CopyConsts& p [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    dst[loc(i, p.dst)] = src[loc(i, p.src)] != 0 ? 1 : 0;
}

kernel void copy_float32_float16(const device float* src [[buffer(0)]], device half* dst [[buffer(1)]],
                                 constant CopyConsts& p [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    copy_one(src, dst, p, i);
}

kernel void copy_float16_float32(const device half* src [[buffer(0)]], device float* dst [[buffer(1)]],
                                 constant CopyConsts& p [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    copy_one(src, dst, p, i);
}

kernel void copy_float32_bfloat16(const device float* src [[buffer(0)]], device bfloat* dst [[buffer(1)]],
                                  constant CopyConsts& p [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    copy_one(src, dst, p, i);
}

kernel void copy_bfloat16_float32(const device bfloat* src [[buffer(0)]], device float* dst [[buffer(1)]],
                                  constant CopyConsts& p [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    copy_one(src, dst, p, i);
}

kernel void copy_float16_float16(const device half* src [[buffer(0)]], device half* dst [[buffer(1)]],
                                 constant CopyConsts& p [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    copy_one(src, dst, p, i);
}

kernel void copy_bfloat16_bfloat16(const device bfloat* src [[buffer(0)]], device bfloat* dst [[buffer(1)]],
                                   constant CopyConsts& p [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    copy_one(src, dst, p, i);
}

// The remaining casts among float32, float16, bfloat16, int32 and bool go through float.

kernel void copy_float16_bfloat16(const device half* src [[buffer(0)]], device bfloat* dst [[buffer(1)]],
                        constant CopyConsts& p [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    dst[loc(i, p.dst)] = bfloat(float(src[loc(i, p.src)]));
}

kernel void copy_float16_int32(const device half* src [[buffer(0)]], device int* dst [[buffer(1)]],
                        constant CopyConsts& p [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    dst[loc(i, p.dst)] = int(float(src[loc(i, p.src)]));
}

kernel void copy_float16_bool(const device half* src [[buffer(0)]], device uchar* dst [[buffer(1)]],
                        constant CopyConsts& p [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    dst[loc(i, p.dst)] = float(src[loc(i, p.src)]) != 0.0f ? 1 : 0;
}

kernel void copy_bfloat16_float16(const device bfloat* src [[buffer(0)]], device half* dst [[buffer(1)]],
                        constant CopyConsts& p [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    dst[loc(i, p.dst)] = half(float(src[loc(i, p.src)]));
}

kernel void copy_bfloat16_int32(const device bfloat* src [[buffer(0)]], device int* dst [[buffer(1)]],
                        constant CopyConsts& p [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    dst[loc(i, p.dst)] = int(float(src[loc(i, p.src)]));
}

kernel void copy_bfloat16_bool(const device bfloat* src [[buffer(0)]], device uchar* dst [[buffer(1)]],
                        constant CopyConsts& p [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    dst[loc(i, p.dst)] = float(src[loc(i, p.src)]) != 0.0f ? 1 : 0;
}

kernel void copy_int32_float16(const device int* src [[buffer(0)]], device half* dst [[buffer(1)]],
                        constant CopyConsts& p [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    dst[loc(i, p.dst)] = half(float(src[loc(i, p.src)]));
}

kernel void copy_int32_bfloat16(const device int* src [[buffer(0)]], device bfloat* dst [[buffer(1)]],
                        constant CopyConsts& p [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    dst[loc(i, p.dst)] = bfloat(float(src[loc(i, p.src)]));
}

kernel void copy_bool_float16(const device uchar* src [[buffer(0)]], device half* dst [[buffer(1)]],
                        constant CopyConsts& p [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    dst[loc(i, p.dst)] = half(src[loc(i, p.src)] != 0 ? 1.0f : 0.0f);
}

kernel void copy_bool_bfloat16(const device uchar* src [[buffer(0)]], device bfloat* dst [[buffer(1)]],
                        constant CopyConsts& p [[buffer(2)]], uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    dst[loc(i, p.dst)] = bfloat(src[loc(i, p.src)] != 0 ? 1.0f : 0.0f);
}
