// prelude: what every kernel family shares. kernels.Source puts it in front of each
// family's file (in place of its `#include "prelude.metal"` line, with #line directives
// so diagnostics keep each file's own line numbers). It holds every parameter struct the
// host sends with setBytes, so each is defined once on the MSL side; once on the Go side
// too (kernels/params.go says where), and a test compares the two field by field.
#include <metal_stdlib>
using namespace metal;

struct Strided {
    int ndim;
    int offset; // applied by the host as the buffer binding offset
    int shape[8];
    int strides[8];
};

struct ArangeParams {
    int n;
    float start;
    float step;
};

struct BinaryParams {
    int op;
    int n;
    Strided a;
    Strided b;
};

struct ConvParams {
    int B;
    int T;
    int C;
    int K;
    int Tout;
};

struct CopyParams {
    int n;
    Strided src;
    Strided dst;
};

struct GatedDeltaParams {
    int B;
    int T;
    int Hk;
    int Hv;
    int Dk;
    int Dv;
    int masked;
};

struct TakeParams {
    int outer;
    int axis;
    int inner;
    int nidx;
};

struct TakeAlongParams {
    int outer;
    int axis;
    int m;
    int inner;
};

struct GatherMMParams {
    int rows;
    int topk;
    int experts;
    int o;
    int k;
};

struct MatmulParams {
    int batch;
    int m;
    int n;
    int k;
    int x_stride;
    int w_stride;
};

struct SwitchGLUParams {
    int T;
    int H;
    int K;
    int E;
    int I;
};

struct GDNBlockParams {
    int B;
    int H;
    int Hk;
    int Hv;
    int Dk;
    int Dv;
    int K;
    int grouped;
    int masked;
    float eps;
    float qk_eps;
    float q_scale;
    float k_scale;
};

struct MoEBlockParams {
    int T;
    int H;
    int E;
    int K;
    int I;
    int Is;
    int renorm;
    float eps;
};

struct MLPBlockParams {
    int T;
    int H;
    int I;
    float eps;
};

struct NormParams {
    int rows;
    int cols;
    float eps;
    int has_weight;
};

struct RowParams {
    int rows;
    int cols;
};

struct QuantParams {
    int M;
    int N;
    int K;
    int bits;
    int group;
};

struct QEmbedParams {
    int T;
    int V;
    int D;
    int bits;
    int group;
};

struct QSwitchGLUParams {
    int T;
    int H;
    int K;
    int E;
    int I;
    int gate_bits;
    int up_bits;
    int down_bits;
    int gate_group;
    int up_group;
    int down_group;
};

struct RoPEParams {
    int B;
    int H;
    int S;
    int D;
    int dims;
};

struct SDPAParams {
    int B;
    int Hq;
    int Hkv;
    int Sq;
    int Skv;
    int D;
    int Dv;
    int k_strides[3];  // batch, head, position
    int v_strides[3];
    int m_strides[4];  // batch, head, query, key
    int has_mask;
    float scale;
    int splits;  // of the keys, one threadgroup each (sdpa.metal)
    int chunk;   // keys per split
};

struct TopKParams {
    int rows;
    int n;
    int k;
};

struct UnaryParams {
    int op;
    int n;
    Strided a;
};

struct WhereParams {
    int n;
    Strided c;
    Strided a;
    Strided b;
};

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
