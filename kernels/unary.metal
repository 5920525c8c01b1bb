// unary family: out = op(a) over a strided input; out is contiguous. The op is a
// parameter (one entry per dtype). Float math in float, as MLX does.
#include <metal_stdlib>
using namespace metal;

struct Strided {
    int ndim;
    int offset;
    int shape[8];
    int strides[8];
};

struct UnaryParams {
    int op;
    int n;
    Strided a;
};

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

// Op codes, in the order of kernels.UnaryOps.
inline float apply(int op, float x) {
    switch (op) {
    case 0: return -x;
    case 1: return exp(x);
    case 2: return log(x);
    case 3: return sqrt(x);
    case 4: return rsqrt(x);
    case 5: return 1.0f / (1.0f + exp(-x));
    case 6: return x / (1.0f + exp(-x));
    case 7: return x > 20.0f ? x : log(1.0f + exp(x));
    case 8: return fabs(x);
    case 9: return x * x;
    case 10: return sin(x);
    case 11: return cos(x);
    case 12: return tanh(x);
    default: return x == 0.0f ? 1.0f : 0.0f;
    }
}

kernel void unary_float32(const device float* a [[buffer(0)]],
                          device float* out [[buffer(1)]],
                          constant UnaryParams& p [[buffer(2)]],
                          uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    out[i] = apply(p.op, a[loc(i, p.a)]);
}

kernel void unary_int32(const device int* a [[buffer(0)]],
                        device int* out [[buffer(1)]],
                        constant UnaryParams& p [[buffer(2)]],
                        uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    int x = a[loc(i, p.a)];
    out[i] = p.op == 0 ? -x : (p.op == 8 ? abs(x) : x * x); // neg, abs, square keep int32
}

kernel void logical_not_bool(const device uchar* a [[buffer(0)]],
                             device uchar* out [[buffer(1)]],
                             constant UnaryParams& p [[buffer(2)]],
                             uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    out[i] = a[loc(i, p.a)] == 0 ? 1 : 0;
}

kernel void unary_float16(const device half* a [[buffer(0)]],
                          device half* out [[buffer(1)]],
                          constant UnaryParams& p [[buffer(2)]],
                          uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    out[i] = half(apply(p.op, float(a[loc(i, p.a)])));
}

kernel void unary_bfloat16(const device bfloat* a [[buffer(0)]],
                           device bfloat* out [[buffer(1)]],
                           constant UnaryParams& p [[buffer(2)]],
                           uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    out[i] = bfloat(apply(p.op, float(a[loc(i, p.a)])));
}
