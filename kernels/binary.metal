// binary family: out = op(a, b) over broadcast, strided inputs; out is contiguous.
// One thread per output element; the op is a parameter (one entry per dtype).
#include "prelude.metal"

// Op codes by name: kernels.binaryCodes gives each Go op the code of its name here, and
// a test checks that the two tables agree.
enum BinaryCode {
    BINARY_ADD = 0,
    BINARY_SUB = 1,
    BINARY_MUL = 2,
    BINARY_DIV = 3,
    BINARY_MAXIMUM = 4,
    BINARY_MINIMUM = 5,
    BINARY_EQUAL = 6,
    BINARY_NOT_EQUAL = 7,
    BINARY_LESS = 8,
    BINARY_LESS_EQUAL = 9,
    BINARY_GREATER = 10,
    BINARY_GREATER_EQUAL = 11,
    BINARY_LOGICAL_AND = 12,
    BINARY_LOGICAL_OR = 13,
};

template <typename T>
inline T arith(int op, T x, T y) {
    switch (op) {
    case BINARY_ADD: return x + y;
    case BINARY_SUB: return x - y;
    case BINARY_MUL: return x * y;
    case BINARY_DIV: return x / y;
    case BINARY_MAXIMUM: return max(x, y);
    default: return min(x, y);
    }
}

template <typename T>
inline uchar compare(int op, T x, T y) {
    switch (op) {
    case BINARY_EQUAL: return x == y;
    case BINARY_NOT_EQUAL: return x != y;
    case BINARY_LESS: return x < y;
    case BINARY_LESS_EQUAL: return x <= y;
    case BINARY_GREATER: return x > y;
    case BINARY_GREATER_EQUAL: return x >= y;
    case BINARY_LOGICAL_AND: return x != T(0) && y != T(0);
    default: return x != T(0) || y != T(0);
    }
}

kernel void binary_float32(const device float* a [[buffer(0)]],
                           const device float* b [[buffer(1)]],
                           device float* out [[buffer(2)]],
                           constant BinaryConsts& p [[buffer(3)]],
                           uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    out[i] = arith(p.op, a[loc(i, p.a)], b[loc(i, p.b)]);
}

kernel void binary_int32(const device int* a [[buffer(0)]],
                         const device int* b [[buffer(1)]],
                         device int* out [[buffer(2)]],
                         constant BinaryConsts& p [[buffer(3)]],
                         uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    out[i] = arith(p.op, a[loc(i, p.a)], b[loc(i, p.b)]);
}

kernel void compare_float32(const device float* a [[buffer(0)]],
                            const device float* b [[buffer(1)]],
                            device uchar* out [[buffer(2)]],
                            constant BinaryConsts& p [[buffer(3)]],
                            uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    out[i] = compare(p.op, a[loc(i, p.a)], b[loc(i, p.b)]);
}

kernel void compare_int32(const device int* a [[buffer(0)]],
                          const device int* b [[buffer(1)]],
                          device uchar* out [[buffer(2)]],
                          constant BinaryConsts& p [[buffer(3)]],
                          uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    out[i] = compare(p.op, a[loc(i, p.a)], b[loc(i, p.b)]);
}

kernel void compare_bool(const device uchar* a [[buffer(0)]],
                         const device uchar* b [[buffer(1)]],
                         device uchar* out [[buffer(2)]],
                         constant BinaryConsts& p [[buffer(3)]],
                         uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    out[i] = compare(p.op, int(a[loc(i, p.a)]), int(b[loc(i, p.b)]));
}

// Half types compute in float and round once on the store.
kernel void binary_float16(const device half* a [[buffer(0)]],
                           const device half* b [[buffer(1)]],
                           device half* out [[buffer(2)]],
                           constant BinaryConsts& p [[buffer(3)]],
                           uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    out[i] = half(arith(p.op, float(a[loc(i, p.a)]), float(b[loc(i, p.b)])));
}

kernel void binary_bfloat16(const device bfloat* a [[buffer(0)]],
                            const device bfloat* b [[buffer(1)]],
                            device bfloat* out [[buffer(2)]],
                            constant BinaryConsts& p [[buffer(3)]],
                            uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    out[i] = bfloat(arith(p.op, float(a[loc(i, p.a)]), float(b[loc(i, p.b)])));
}

kernel void compare_float16(const device half* a [[buffer(0)]],
                            const device half* b [[buffer(1)]],
                            device uchar* out [[buffer(2)]],
                            constant BinaryConsts& p [[buffer(3)]],
                            uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    out[i] = compare(p.op, float(a[loc(i, p.a)]), float(b[loc(i, p.b)]));
}

kernel void compare_bfloat16(const device bfloat* a [[buffer(0)]],
                             const device bfloat* b [[buffer(1)]],
                             device uchar* out [[buffer(2)]],
                             constant BinaryConsts& p [[buffer(3)]],
                             uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    out[i] = compare(p.op, float(a[loc(i, p.a)]), float(b[loc(i, p.b)]));
}
