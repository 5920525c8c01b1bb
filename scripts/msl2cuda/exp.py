# Issue 21 experiments: the staged qmv's threadgroup shape and sdpa's key split, against
# the kernels of an earlier tree (OLD_KERNELS: its kernels folder), one call timing every
# variant (median of 20, cold L2). docs/h200/run10-exp*.log hold the runs that set
# kernels.qmvStaged*, sdpaGroups and the choice of the unit path for qswitch_glu.
import os

import cases as C
import msl2cuda as M

OLD = os.environ.get('OLD_KERNELS')


def text(fam, kdir):
    return open(os.path.join(kdir, fam + '.metal')).read()


def run(name, c, L):
    L()
    C.sync()
    (err, nn), _ = c.check()
    t, _ = C.timed(L, reps=20, warm=3)
    print('%-60s %9.1f us  err %.1e NaN %d  %s  %s' % (name, t, err, nn, L.geom(), L.attrs()), flush=True)
    return t


def qmv(tag, N, K, bits, sdt, geom=None):
    C.QMV_GEOM = geom
    c = C.case_qmv(N, K, bits, 64, sdt)
    run('%s qmv %d-bit %s %d -> %d' % (tag, bits, sdt, K, N), c, c.launch)
    C.QMV_GEOM = None
    C.free_all()


def unit(N, K, bits):
    """The earlier tree's qmvEncode (no staged entry)."""
    blocks = (N + 7) // 8
    return 'qmv', blocks, C.qmv_threads(K // 8, 4 if blocks >= 4096 else 1)


def staged(ty, bpt):
    return lambda N, K, bits: ('qmv_staged', ((N + 7) // 8 + bpt - 1) // bpt, (32, ty, 1))


if OLD:
    C.TEXT['quant'] = text('quant', OLD)
    for bits, sdt in ((4, 'float32'), (8, 'float32'), (4, 'bfloat16')):
        qmv('old', 248320, 1024, bits, sdt, unit)
    C.TEXT.pop('quant')
for ty, bpt in ((4, 32), (2, 32), (4, 64), (8, 32), (2, 16)):
    qmv('staged %d slots, %d blocks' % (ty, bpt), 248320, 1024, 4, 'float32', staged(ty, bpt))
for N, K in ((3584, 1024), (1024, 3584)):
    qmv('unit (default)', N, K, 4, 'float32')
    qmv('staged 4 slots, 4 blocks', N, K, 4, 'float32', staged(4, 4))

split = C.sdpa_split
variants = [('new', text('sdpa', M.KDIR), 256)]
variants.append(('new KB 1', variants[0][1].replace('#define SDPA_KB 2', '#define SDPA_KB 1'), 256))
if OLD:
    variants.insert(0, ('old', text('sdpa', OLD), 512))
for name, t, groups in variants:
    C.TEXT['sdpa'] = t
    C.sdpa_split = lambda tgs, skv, min_chunk=32, groups=groups: split(tgs, skv, min_chunk, groups)
    for skv in (4096, 32768):
        c = C.case_sdpa(1, 8, 2, 1, skv, 256, 256)
        run('%s sdpa %d keys, %d groups' % (name, skv, groups), c, c.launch)
        C.free_all()
C.sdpa_split = split
C.TEXT.pop('sdpa', None)
