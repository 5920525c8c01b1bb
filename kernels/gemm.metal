// gemm: the tiled matrix product that matmul (linear) and quant (qmm) share for many x
// rows (prefill): out[m, n] = sum_k x[m, k] * w[n, k], both operands K-contiguous rows.
// A threadgroup of GEMM_THREADS (256) threads computes a GEMM_BM x GEMM_BN tile of out.
// Each step copies a GEMM_BK-wide slice of its x rows and of its w rows to threadgroup
// memory, transposed (k-major, so a thread reads its rows and columns as float4s), and
// every thread adds GEMM_TM x GEMM_TN products a k: each staged w value serves GEMM_BM x
// rows, each x value GEMM_BN w rows. A loader turns its operand's rows into floats as it
// stages them, so a quantized w (qmm) is dequantized once a tile, not once a product.
// The next slice's device loads are issued before this slice is added (registers), so
// they are in flight while the threadgroup computes. Sums are float32, k in order for
// each output (fused multiply-adds): the Go twins' products, added in another order
// (within the catalog's tolerance).
#include "prelude.metal"

#define GEMM_THREADS 256
#define GEMM_TM 4                    // out rows a thread
#define GEMM_TN 4                    // out columns a thread
#define GEMM_BM (16 * GEMM_TM)       // out rows a threadgroup
#define GEMM_BN (16 * GEMM_TN)       // out columns a threadgroup
#define GEMM_BK (128 / GEMM_TN)      // k a step: a w slice is 8 values a thread, one unit of 8 codes
#define GEMM_LDA (GEMM_BM + 4)       // staged x row pitch (float4-aligned)
#define GEMM_LDB (GEMM_BN + 4)       // staged w row pitch
#define GEMM_AV (GEMM_BM * GEMM_BK / GEMM_THREADS)  // x values a thread stages a step
#define GEMM_BV (GEMM_BN * GEMM_BK / GEMM_THREADS)  // w values a thread stages a step (8)

// GemmRows loads rows of a dense row-major [rows, cols] matrix of T (V values a thread a
// step, R = V * GEMM_THREADS / GEMM_BK rows a tile): value e = tid + i * GEMM_THREADS of a
// tile is row e / GEMM_BK, column e % GEMM_BK, so a simdgroup reads whole row segments.
// Rows past the last read the last (their outputs are not written); columns past cols
// are zeros.
template <typename T, int V>
struct GemmRows {
    const device T* p;
    int rows;
    int cols;

    struct Regs {
        float v[V];
    };

    void load(int r0, int k0, uint tid, thread Regs& g) const {
        for (int i = 0; i < V; i++) {
            int e = int(tid) + i * GEMM_THREADS;
            int r = min(r0 + e / GEMM_BK, rows - 1);
            int k = k0 + e % GEMM_BK;
            g.v[i] = k < cols ? float(p[size_t(r) * size_t(cols) + size_t(k)]) : 0.0f;
        }
    }

    void store(thread const Regs& g, threadgroup float* s, int ld, uint tid) const {
        for (int i = 0; i < V; i++) {
            int e = int(tid) + i * GEMM_THREADS;
            s[(e % GEMM_BK) * ld + e / GEMM_BK] = g.v[i];
        }
    }
};

// gemm_tile adds the tile of out rows m0.. and columns n0.. over K to acc (GEMM_TM x
// GEMM_TN, row-major), with la loading the x rows and lb the w rows (each a GemmRows or a
// quantized loader: load(r0, k0, tid, regs), store(regs, staged, pitch, tid)). Thread
// tid's rows are 4 * ty + i + 64 h and its columns 4 * tx + j + 64 h: a simdgroup is 4
// ty by 8 tx, so each of its float4 reads of a step is one pass over the banks. Every
// thread makes the same trips (barriers).
template <typename LA, typename LB>
inline void gemm_tile(LA la, LB lb, int K, int m0, int n0, threadgroup float* As, threadgroup float* Bs, uint tid,
                      thread float* acc) {
    int sg = int(tid) / 32, lane = int(tid) % 32;
    int tx = (sg % 2) * 8 + lane % 8;
    int ty = (sg / 2) * 4 + lane / 8;
    for (int i = 0; i < GEMM_TM * GEMM_TN; i++) {
        acc[i] = 0.0f;
    }
    typename LA::Regs ra;
    typename LB::Regs rb;
    int steps = (K + GEMM_BK - 1) / GEMM_BK;
    if (steps > 0) {
        la.load(m0, 0, tid, ra);
        lb.load(n0, 0, tid, rb);
    }
    for (int t = 0; t < steps; t++) {
        la.store(ra, As, GEMM_LDA, tid);
        lb.store(rb, Bs, GEMM_LDB, tid);
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (t + 1 < steps) {  // the next slice's loads, in flight while this one is added
            la.load(m0, (t + 1) * GEMM_BK, tid, ra);
            lb.load(n0, (t + 1) * GEMM_BK, tid, rb);
        }
        for (int kk = 0; kk < GEMM_BK; kk++) {
            threadgroup const float4* ar = (threadgroup const float4*)(As + kk * GEMM_LDA);
            threadgroup const float4* br = (threadgroup const float4*)(Bs + kk * GEMM_LDB);
            float a[GEMM_TM];
            float b[GEMM_TN];
            for (int h = 0; h < GEMM_TM / 4; h++) {
                float4 v = ar[h * 16 + ty];
                a[4 * h] = v.x;
                a[4 * h + 1] = v.y;
                a[4 * h + 2] = v.z;
                a[4 * h + 3] = v.w;
            }
            for (int h = 0; h < GEMM_TN / 4; h++) {
                float4 v = br[h * 16 + tx];
                b[4 * h] = v.x;
                b[4 * h + 1] = v.y;
                b[4 * h + 2] = v.z;
                b[4 * h + 3] = v.w;
            }
            for (int i = 0; i < GEMM_TM; i++) {
                for (int j = 0; j < GEMM_TN; j++) {
                    acc[i * GEMM_TN + j] = fma(a[i], b[j], acc[i * GEMM_TN + j]);
                }
            }
        }
        // The next step overwrites the staged slices: every thread must be done.
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
}

// gemm_store writes a thread's tile (from gemm_tile) to out [M, N] row-major, the rows
// and columns inside it.
template <typename T>
inline void gemm_store(device T* out, int M, int N, int m0, int n0, uint tid, thread const float* acc) {
    int sg = int(tid) / 32, lane = int(tid) % 32;
    int tx = (sg % 2) * 8 + lane % 8;
    int ty = (sg / 2) * 4 + lane / 8;
    for (int i = 0; i < GEMM_TM; i++) {
        int m = m0 + (i / 4) * 64 + 4 * ty + i % 4;
        if (m >= M) {
            continue;
        }
        for (int j = 0; j < GEMM_TN; j++) {
            int n = n0 + (j / 4) * 64 + 4 * tx + j % 4;
            if (n < N) {
                out[size_t(m) * size_t(N) + size_t(n)] = T(acc[i * GEMM_TN + j]);
            }
        }
    }
}
