// where family: out = cond ? a : b over broadcast, strided inputs; out is contiguous.
#include "prelude.metal"

kernel void where_float32(const device uchar* c [[buffer(0)]], const device float* a [[buffer(1)]],
                          const device float* b [[buffer(2)]], device float* out [[buffer(3)]],
                          constant WhereConsts& p [[buffer(4)]], uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    out[i] = c[loc(i, p.c)] != 0 ? a[loc(i, p.a)] : b[loc(i, p.b)];
}

kernel void where_int32(const device uchar* c [[buffer(0)]], const device int* a [[buffer(1)]],
                        const device int* b [[buffer(2)]], device int* out [[buffer(3)]],
                        constant WhereConsts& p [[buffer(4)]], uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    out[i] = c[loc(i, p.c)] != 0 ? a[loc(i, p.a)] : b[loc(i, p.b)];
}

kernel void where_bool(const device uchar* c [[buffer(0)]], const device uchar* a [[buffer(1)]],
                       const device uchar* b [[buffer(2)]], device uchar* out [[buffer(3)]],
                       constant WhereConsts& p [[buffer(4)]], uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    out[i] = c[loc(i, p.c)] != 0 ? a[loc(i, p.a)] : b[loc(i, p.b)];
}

kernel void where_float16(const device uchar* c [[buffer(0)]], const device half* a [[buffer(1)]],
                          const device half* b [[buffer(2)]], device half* out [[buffer(3)]],
                          constant WhereConsts& p [[buffer(4)]], uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    out[i] = c[loc(i, p.c)] != 0 ? a[loc(i, p.a)] : b[loc(i, p.b)];
}

kernel void where_bfloat16(const device uchar* c [[buffer(0)]], const device bfloat* a [[buffer(1)]],
                           const device bfloat* b [[buffer(2)]], device bfloat* out [[buffer(3)]],
                           constant WhereConsts& p [[buffer(4)]], uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    out[i] = c[loc(i, p.c)] != 0 ? a[loc(i, p.a)] : b[loc(i, p.b)];
}
