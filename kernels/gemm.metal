// gemm: the tiled matrix product that matmul (linear) and quant (qmm) share for many x
// rows (prefill): out[m, n] = sum_k x[m, k] * w[n, k], both operands K-contiguous rows.
// A threadgroup of GEMM_THREADS (256) threads, 16 x 16 of them, computes a tile of out,
// each thread TM x TN of it. Each step copies a BK-wide slice of the tile's x rows and of
// its w rows to threadgroup memory, transposed (k-major, so a thread reads its rows and
// columns as float4s), and every thread adds TM x TN products a k: each staged w value
// serves the tile's x rows, each x value its w rows. A loader turns its operand's rows
// into floats as it stages them, so a quantized w (qmm) is dequantized once a tile, not
// once a product. The next slice's device loads are issued before this slice is added
// (registers), so they are in flight while the threadgroup computes. Sums are float32,
// k in order for each output (fused multiply-adds): the Go twins' products, added in
// another order (within the catalog's tolerance).
#include "prelude.metal"

#define GEMM_THREADS 256
// A thread tile of TM x TN (4 or 8 each): GEMM_BM(TM) x GEMM_BN(TN) out a threadgroup,
// GEMM_BK(TN) k a step (a w slice is 8 values a thread, or one unit of 8 codes), the staged
// slices' row pitches GEMM_LD (float4-aligned). Two tiles are built: 4 x 4 (64 x 64 out,
// 32 k a step) and 8 x 8 (128 x 128, 16 k a step); Encode picks one by the tile count.
#define GEMM_BM(TM) (16 * (TM))
#define GEMM_BN(TN) (16 * (TN))
#define GEMM_BK(TN) (128 / (TN))
#define GEMM_LD(B) ((B) + 4)
#define GEMM_AS(TM, TN) (GEMM_BK(TN) * GEMM_LD(GEMM_BM(TM)))  // staged x floats
#define GEMM_BS(TN) (GEMM_BK(TN) * GEMM_LD(GEMM_BN(TN)))      // staged w floats

// GemmRows loads rows of a dense row-major [rows, cols] matrix of T (V values a thread a
// step of BK columns, V * GEMM_THREADS / BK rows a tile): value e = tid + i * GEMM_THREADS
// of a tile is row e / BK, column e % BK, so a simdgroup reads whole row segments.
// Rows past the last read the last (their outputs are not written); columns past cols
// are zeros.
template <typename T, int V, int BK>
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
            int r = min(r0 + e / BK, rows - 1);
            int k = k0 + e % BK;
            g.v[i] = k < cols ? float(p[size_t(r) * size_t(cols) + size_t(k)]) : 0.0f;
        }
    }

    void store(thread const Regs& g, threadgroup float* s, int ld, uint tid) const {
        for (int i = 0; i < V; i++) {
            int e = int(tid) + i * GEMM_THREADS;
            s[(e % BK) * ld + e / BK] = g.v[i];
        }
    }
};

// gemm_tile adds the tile of out rows m0.. and columns n0.. over K to acc (TM x TN,
// row-major), with la loading the x rows and lb the w rows (each a GemmRows or a
// quantized loader: load(r0, k0, tid, regs), store(regs, staged, pitch, tid)). Thread
// tid's rows are 4 * ty + i + 64 h and its columns 4 * tx + j + 64 h: a simdgroup is 4
// ty by 8 tx, so each of its float4 reads of a step is one pass over the banks. Every
// thread makes the same trips (barriers).
template <int TM, int TN, typename LA, typename LB>
inline void gemm_tile(LA la, LB lb, int K, int m0, int n0, threadgroup float* As, threadgroup float* Bs, uint tid,
                      thread float* acc) {
    const int BK = GEMM_BK(TN), LDA = GEMM_LD(GEMM_BM(TM)), LDB = GEMM_LD(GEMM_BN(TN));
    int sg = int(tid) / 32, lane = int(tid) % 32;
    int tx = (sg % 2) * 8 + lane % 8;
    int ty = (sg / 2) * 4 + lane / 8;
    for (int i = 0; i < TM * TN; i++) {
        acc[i] = 0.0f;
    }
    typename LA::Regs ra;
    typename LB::Regs rb;
    int steps = (K + BK - 1) / BK;
    if (steps > 0) {
        la.load(m0, 0, tid, ra);
        lb.load(n0, 0, tid, rb);
    }
    for (int t = 0; t < steps; t++) {
        la.store(ra, As, LDA, tid);
        lb.store(rb, Bs, LDB, tid);
        threadgroup_barrier(mem_flags::mem_threadgroup);
        if (t + 1 < steps) {  // the next slice's loads, in flight while this one is added
            la.load(m0, (t + 1) * BK, tid, ra);
            lb.load(n0, (t + 1) * BK, tid, rb);
        }
        for (int kk = 0; kk < BK; kk++) {
            threadgroup const float4* ar = (threadgroup const float4*)(As + kk * LDA);
            threadgroup const float4* br = (threadgroup const float4*)(Bs + kk * LDB);
            float a[TM];
            float b[TN];
            for (int h = 0; h < TM / 4; h++) {
                float4 v = ar[h * 16 + ty];
                a[4 * h] = v.x;
                a[4 * h + 1] = v.y;
                a[4 * h + 2] = v.z;
                a[4 * h + 3] = v.w;
            }
            for (int h = 0; h < TN / 4; h++) {
                float4 v = br[h * 16 + tx];
                b[4 * h] = v.x;
                b[4 * h + 1] = v.y;
                b[4 * h + 2] = v.z;
                b[4 * h + 3] = v.w;
            }
            for (int i = 0; i < TM; i++) {
                for (int j = 0; j < TN; j++) {
                    acc[i * TN + j] = fma(a[i], b[j], acc[i * TN + j]);
                }
            }
        }
        // The next step overwrites the staged slices: every thread must be done.
        threadgroup_barrier(mem_flags::mem_threadgroup);
    }
}

// gemm_store writes a thread's tile (from gemm_tile) to out [M, N] row-major, the rows
// and columns inside it.
template <int TM, int TN, typename T>
inline void gemm_store(device T* out, int M, int N, int m0, int n0, uint tid, thread const float* acc) {
    int sg = int(tid) / 32, lane = int(tid) % 32;
    int tx = (sg % 2) * 8 + lane % 8;
    int ty = (sg / 2) * 4 + lane / 8;
    for (int i = 0; i < TM; i++) {
        int m = m0 + (i / 4) * 64 + 4 * ty + i % 4;
        if (m >= M) {
            continue;
        }
        for (int j = 0; j < TN; j++) {
            int n = n0 + (j / 4) * 64 + 4 * tx + j % 4;
            if (n < N) {
                out[size_t(m) * size_t(N) + size_t(n)] = T(acc[i * TN + j]);
            }
        }
    }
}

// gemm_run is a threadgroup's tile of a TM x TN tiled product (grid x = column tiles, y =
// row tiles), la and lb as for gemm_tile; M, N and K as the launch's, out its [M, N].
template <int TM, int TN, typename T, typename LA, typename LB>
inline void gemm_run(LA la, LB lb, device T* out, int M, int N, int K, threadgroup float* As, threadgroup float* Bs,
                     uint3 tg, uint tid) {
    int n0 = int(tg.x) * GEMM_BN(TN), m0 = int(tg.y) * GEMM_BM(TM);
    if (n0 >= N || m0 >= M) {
        return;  // an empty launch still dispatches one group; uniform, before any barrier
    }
    float acc[TM * TN];
    gemm_tile<TM, TN>(la, lb, K, m0, n0, As, Bs, tid, acc);
    gemm_store<TM, TN>(out, M, N, m0, n0, tid, acc);
}
