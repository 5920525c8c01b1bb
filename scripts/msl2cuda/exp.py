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


for rows in (4, 8, 16):
    C.QMV_ROWS = rows
    C.TEXT['quant'] = QUANT.replace('#define QMV_ROWS 8', '#define QMV_ROWS %d' % rows)
    for N, K, widths in ((248320, 1024, (32, 64)), (1024, 3584, (128, 256))):
        for tpg in widths:
            c, L = qmv(N, K, tpg)
            run('qmv 4-bit %d -> %d, %d rows, %d threads' % (K, N, rows, tpg), c, L)
            del c
            C.free_all()
    c = C.case_qswitch(1, 2048, 512, 512, 10)
    run('qswitch_glu Qwen3-Next, %d rows' % rows, c, c.launch)
    del c
    C.free_all()
C.QMV_ROWS = 8
C.TEXT.pop('quant')

for kb in (1, 2, 4):
    C.TEXT['sdpa'] = SDPA.replace('#define SDPA_KB 2', '#define SDPA_KB %d' % kb)
    for skv in (4096, 32768):
        c = C.case_sdpa(1, 8, 2, 1, skv, 256, 256)
        run('sdpa %d keys, %d keys a step' % (skv, kb), c, c.launch)
        del c
        C.free_all()
C.TEXT.pop('sdpa')
