# Launch-geometry and constant experiments for issue 21: the kernels take their width
# from threads_per_threadgroup and their key split from the params, and C.TEXT swaps in
# a family's MSL with other constants, so one run times many variants (median, cold L2).
import os

import cases as C
import msl2cuda as M

QUANT = open(os.path.join(M.KDIR, 'quant.metal')).read()
SDPA = open(os.path.join(M.KDIR, 'sdpa.metal')).read()


def run(name, c, L):
    L()
    C.sync()
    (err, nn), _ = c.check()
    t, _ = C.timed(L, reps=20, warm=3)
    print('%-52s %9.1f us  err %.1e NaN %d  %s' % (name, t, err, nn, L.geom()), flush=True)


def qmv(N, K, tpg):
    c = C.case_qmv(N, K, 4, 64)
    L = C.Kern('quant', 'qmv_float32').groups(list(c.launch.args[:6]), ((N + C.QMV_ROWS - 1) // C.QMV_ROWS, 1, 1),
                                             (tpg, 1, 1))
    return c, L


for unroll in (1, 2, 4):
    C.TEXT['quant'] = QUANT.replace('#define QMV_UNROLL 2', '#define QMV_UNROLL %d' % unroll)
    for N, K, widths in ((248320, 1024, (32, 64)), (1024, 3584, (128, 256)), (3584, 1024, (64, 128))):
        for tpg in widths:
            c, L = qmv(N, K, tpg)
            run('qmv 4-bit %d -> %d, %d units a step, %d threads' % (K, N, unroll, tpg), c, L)
            del c
            C.free_all()
C.TEXT.pop('quant')

# sdpa's keys a step (SDPA_KB 1/2/4) were timed in docs/h200/run8-exp.log.
