// unary family: out = op(a) over a strided input; out is contiguous. The op is a
// parameter (one entry per dtype). Float math in float, as MLX does.
#include "prelude.metal"

// Op codes by name: kernels.unaryCodes gives each Go op the code of its name here, and
// a test checks that the two tables agree.
enum UnaryCode {
    UNARY_NEG = 0,
    UNARY_EXP = 1,
    UNARY_LOG = 2,
    UNARY_SQRT = 3,
    UNARY_RSQRT = 4,
    UNARY_SIGMOID = 5,
    UNARY_SILU = 6,
    UNARY_SOFTPLUS = 7,
    UNARY_ABS = 8,
    UNARY_SQUARE = 9,
    UNARY_SIN = 10,
    UNARY_COS = 11,
    UNARY_TANH = 12,
    UNARY_LOGICAL_NOT = 13,
};

inline float apply(int op, float x) {
    switch (op) {
    case UNARY_NEG: return -x;
    case UNARY_EXP: return exp(x);
    case UNARY_LOG: return log(x);
    case UNARY_SQRT: return sqrt(x);
    case UNARY_RSQRT: return rsqrt(x);
    case UNARY_SIGMOID: return 1.0f / (1.0f + exp(-x));
    case UNARY_SILU: return x / (1.0f + exp(-x));
    case UNARY_SOFTPLUS: return x > 20.0f ? x : log(1.0f + exp(x));
    case UNARY_ABS: return fabs(x);
    case UNARY_SQUARE: return x * x;
    case UNARY_SIN: return sin(x);
    case UNARY_COS: return cos(x);
    case UNARY_TANH: return tanh(x);
    default: return x == 0.0f ? 1.0f : 0.0f;
    }
}

kernel void unary_float32(const device float* a [[buffer(0)]],
                          device float* out [[buffer(1)]],
                          constant UnaryConsts& p [[buffer(2)]],
                          uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    out[i] = apply(p.op, a[loc(i, p.a)]);
}

kernel void unary_int32(const device int* a [[buffer(0)]],
                        device int* out [[buffer(1)]],
                        constant UnaryConsts& p [[buffer(2)]],
                        uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    int x = a[loc(i, p.a)];
    out[i] = p.op == UNARY_NEG ? -x : (p.op == UNARY_ABS ? abs(x) : x * x); // neg, abs, square keep int32
}

kernel void logical_not_bool(const device uchar* a [[buffer(0)]],
                             device uchar* out [[buffer(1)]],
                             constant UnaryConsts& p [[buffer(2)]],
                             uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    out[i] = a[loc(i, p.a)] == 0 ? 1 : 0;
}

kernel void unary_float16(const device half* a [[buffer(0)]],
                          device half* out [[buffer(1)]],
                          constant UnaryConsts& p [[buffer(2)]],
                          uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    out[i] = half(apply(p.op, float(a[loc(i, p.a)])));
}

kernel void unary_bfloat16(const device bfloat* a [[buffer(0)]],
                           device bfloat* out [[buffer(1)]],
                           constant UnaryConsts& p [[buffer(2)]],
                           uint i [[thread_position_in_grid]]) {
    if (int(i) >= p.n) return;
    out[i] = bfloat(apply(p.op, float(a[loc(i, p.a)])));
}
