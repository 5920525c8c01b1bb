# Issue 32 experiments on the tiled product (gemm.metal), one call (median of 20, cold L2):
#   tiles: both thread tiles (the 4 and 8 entries: 64 x 64 and 128 x 128 out a threadgroup)
#          for gemm f32 and qmm 4-/8-bit at M = 512 on the 0.8B's products
#          (kernels.gemmBigMinTiles). docs/h200/run17-h100-exp.log holds the run of tree
#          b58280c, whose tile was a #define: 4x4, 8x8, 8x4 and 4x8 there;
#   rows:  the decode entries (linear, qmv, the one-thread qmm) against the tiled ones from
#          4 to 128 x rows, 1024 -> 3584 (kernels.gemmMinRows, qmmGemmMinRows);
#   base:  the entries M = 512 took before the tiled ones (linear, the one-thread qmm).
# EXP picks them (default all); EXP_SMALL=1 for a dry run at tiny sizes (check/fakecp.py).
# TFLOP/s against the H200's float32 CUDA-core peak, 67 TFLOP/s (datasheet).
import os

import cases as C

ONLY = os.environ.get('EXP', 'tiles,rows,base').split(',')
SMALL = bool(os.environ.get('EXP_SMALL'))
PM = 40 if SMALL else 512
SHAPES = [(96, 64)] if SMALL else [(3584, 1024), (1024, 3584), (6144, 1024), (4096, 1024), (1024, 2048)]  # (N, K)


def run(name, c, reps=20):
    c.launch()
    C.sync()
    (err, nn), _ = c.check()
    t, _ = C.timed(c.launch, reps=reps, warm=min(3, reps))
    tf = c.flops / t / 1e6
    print('%-52s %10.1f us %7.2f TFLOP/s %5.1f%% of 67  err %.1e NaN %d  %s  %s' % (
        name, t, tf, 100 * tf / 67, err, nn, c.launch.geom(), c.launch.attrs()), flush=True)
    C.free_all()


def tiles(t):
    C.GEMM_TILE = t
    for n, k in SHAPES:
        run('%dx%d gemm f32 %d -> %d M=%d' % (t, t, k, n, PM), C.case_gemm(PM, n, k))
        for bits, sdt in ((4, 'float32'), (8, 'float32'), (4, 'bfloat16')):
            run('%dx%d qmm_gemm %d-bit %s %d -> %d M=%d' % (t, t, bits, sdt, k, n, PM),
                C.case_qmv(n, k, bits, 64, sdt, M=PM, entry='qmm_gemm'))
    C.GEMM_TILE = None


if 'tiles' in ONLY:
    for t in (4, 8):
        tiles(t)

if 'rows' in ONLY:
    n, k = SHAPES[0]
    for m in (4, 8, 16, 32, 64, 128):
        run('rows linear f32 %d -> %d M=%d' % (k, n, m), C.case_linear(n, k, m), reps=10)
        run('rows gemm f32 %d -> %d M=%d' % (k, n, m), C.case_gemm(m, n, k), reps=10)
        run('rows qmv 4-bit %d -> %d M=%d' % (k, n, m), C.case_qmv(n, k, 4, 64, 'float32', M=m), reps=10)
        run('rows qmm (one thread an output) 4-bit %d -> %d M=%d' % (k, n, m),
            C.case_qmv(n, k, 4, 64, 'float32', M=m, entry='qmm'), reps=5)
        run('rows qmm_gemm 4-bit %d -> %d M=%d' % (k, n, m),
            C.case_qmv(n, k, 4, 64, 'float32', M=m, entry='qmm_gemm'), reps=10)

if 'base' in ONLY:
    for n, k in SHAPES:
        run('before: linear f32 %d -> %d M=%d' % (k, n, PM), C.case_linear(n, k, PM), reps=3)
        for bits in (4, 8):
            run('before: qmm (one thread an output) %d-bit %d -> %d M=%d' % (bits, k, n, PM),
                C.case_qmv(n, k, bits, 64, 'float32', M=PM, entry='qmm'), reps=3)
