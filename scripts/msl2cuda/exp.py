# Launch-geometry experiments for issue 21 (the MSL kernels take their width from
# threads_per_threadgroup and their key split from the params, so one build serves all):
# median cold time of each variant, printed as a table.
import sys

import cases as C

def qmv_width(N, K, tpg):
    c = C.case_qmv(N, K, 4, 64)
    L = c.launch
    L2 = C.Kern('quant', 'qmv_float32').groups(list(L.args[:6]), ((N + 7) // 8, 1, 1), (tpg, 1, 1))
    return c, L2

def run(name, c, L):
    L()
    C.sync()
    (err, nn), _ = c.check()
    t, _ = C.timed(L, reps=20, warm=3)
    print('%-44s %9.1f us  err %.1e NaN %d  %s' % (name, t, err, nn, L.geom()), flush=True)

for N, K in ((248320, 1024), (1024, 3584)):
    for tpg in (32, 64, 128, 256):
        if tpg > 32 * 8:
            continue
        c, L = qmv_width(N, K, tpg)
        run('qmv 4-bit %d -> %d, %d threads' % (K, N, tpg), c, L)
        del c
        C.free_all()

orig_split = C.sdpa_split
for skv in (4096, 32768):
    for mc, groups in ((16, 2048), (32, 2048), (64, 2048), (32, 4096), (128, 2048)):
        C.sdpa_split = lambda tgs, s, mc=mc, groups=groups: orig_split(tgs, s, mc, groups)
        c = C.case_sdpa(1, 8, 2, 1, skv, 256, 256)
        run('sdpa %d keys, min chunk %d, %d groups' % (skv, mc, groups), c, c.launch)
        del c
        C.free_all()
C.sdpa_split = orig_split
