// binary family: out = op(a, b) over broadcast, strided inputs; out is contiguous.
// One thread per output element; the op is a parameter (one entry per dtype).
#include <metal_stdlib>
using namespace metal;

struct Strided {
    int ndim;
    int offset; // applied by the host as the buffer binding offset
    int shape[8];
    int strides[8];
};

struct BinaryParams {
    int op;
    int n;
    Strided a;
    Strided b;
};

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

// Op codes, in the order of kernels.BinaryOps.
enum BinaryOp {
    OP_ADD = 0, OP_SUB = 1, OP_MUL = 2, OP_DIV = 3, OP_MAX = 4, OP_MIN = 5,
    OP_EQ = 6, OP_NE = 7, OP_LT = 8, OP_LE = 9, OP_GT = 10, OP_GE = 11,
    OP_AND = 12, OP_OR = 13
};

template <typename T>
inline T arith(int op, T x, T y) {
    switch (op) {
    case OP_ADD: return x + y;
    case OP_SUB: return x - y;
    case OP_MUL: return x * y;
    case OP_DIV: return x / y;
    case OP_MAX: return max(x, y);
    default: return min(x, y);
    }
}

template <typename T>
inline uchar compare(int op, T x, T y) {
    switch (op) {
    case OP_EQ: return x == y;
    case OP_NE: return x != y;
    case OP_LT: return x < y;
    case OP_LE: return x <= y;
    case OP_GT: return x > y;
    case OP_GE: return x >= y;
    case OP_AND: return x != T(0) && y != T(0);
    default: return x != T(0) || y != T(0);
    }
}

kernel void binary_float32(const device float* a [[buffer(0)]],
                           const device float* b [[buffer(1)]],
                           device float* out [[buffer(2)]],
                           constant BinaryParams& p [[buffer(3)]],
                           uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    out[i] = arith(p.op, a[loc(i, p.a)], b[loc(i, p.b)]);
}

kernel void binary_int32(const device int* a [[buffer(0)]],
                         const device int* b [[buffer(1)]],
                         device int* out [[buffer(2)]],
                         constant BinaryParams& p [[buffer(3)]],
                         uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    out[i] = arith(p.op, a[loc(i, p.a)], b[loc(i, p.b)]);
}

kernel void compare_float32(const device float* a [[buffer(0)]],
                            const device float* b [[buffer(1)]],
                            device uchar* out [[buffer(2)]],
                            constant BinaryParams& p [[buffer(3)]],
                            uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    out[i] = compare(p.op, a[loc(i, p.a)], b[loc(i, p.b)]);
}

kernel void compare_int32(const device int* a [[buffer(0)]],
                          const device int* b [[buffer(1)]],
                          device uchar* out [[buffer(2)]],
                          constant BinaryParams& p [[buffer(3)]],
                          uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    out[i] = compare(p.op, a[loc(i, p.a)], b[loc(i, p.b)]);
}

kernel void compare_bool(const device uchar* a [[buffer(0)]],
                         const device uchar* b [[buffer(1)]],
                         device uchar* out [[buffer(2)]],
                         constant BinaryParams& p [[buffer(3)]],
                         uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    out[i] = compare(p.op, int(a[loc(i, p.a)]), int(b[loc(i, p.b)]));
}

// Half types compute in float and round once on the store.
kernel void binary_float16(const device half* a [[buffer(0)]],
                           const device half* b [[buffer(1)]],
                           device half* out [[buffer(2)]],
                           constant BinaryParams& p [[buffer(3)]],
                           uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    out[i] = half(arith(p.op, float(a[loc(i, p.a)]), float(b[loc(i, p.b)])));
}

kernel void binary_bfloat16(const device bfloat* a [[buffer(0)]],
                            const device bfloat* b [[buffer(1)]],
                            device bfloat* out [[buffer(2)]],
                            constant BinaryParams& p [[buffer(3)]],
                            uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    out[i] = bfloat(arith(p.op, float(a[loc(i, p.a)]), float(b[loc(i, p.b)])));
}

kernel void compare_float16(const device half* a [[buffer(0)]],
                            const device half* b [[buffer(1)]],
                            device uchar* out [[buffer(2)]],
                            constant BinaryParams& p [[buffer(3)]],
                            uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    out[i] = compare(p.op, float(a[loc(i, p.a)]), float(b[loc(i, p.b)]));
}

kernel void compare_bfloat16(const device bfloat* a [[buffer(0)]],
                             const device bfloat* b [[buffer(1)]],
                             device uchar* out [[buffer(2)]],
                             constant BinaryParams& p [[buffer(3)]],
                             uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    out[i] = compare(p.op, float(a[loc(i, p.a)]), float(b[loc(i, p.b)]));
}
