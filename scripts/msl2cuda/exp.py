# Issue 21 experiments: the staged qmv / qswitch_glu and the prefetching sdpa against the
# kernels they replace (OLD_KERNELS: a kernels folder of the earlier tree), and their
# threadgroup shapes; one call times every variant (median of 20, cold L2).
import os
import sys

import cases as C
import msl2cuda as M

OLD = os.environ.get('OLD_KERNELS')
only = sys.argv[1:]


def text(fam, kdir):
    return open(os.path.join(kdir, fam + '.metal')).read()


def run(name, c, L):
    L()
    C.sync()
    (err, nn), _ = c.check()
    t, _ = C.timed(L, reps=20, warm=3)
    print('%-60s %9.1f us  err %.1e NaN %d  %s  %s' % (name, t, err, nn, L.geom(), L.attrs()), flush=True)
    return t


def old_qmv(N, K, bits):
    blocks = (N + 7) // 8
    return blocks, C.qmv_threads(K // 8, 4 if blocks >= 4096 else 1)


def old_qsw(T, H, I, K, bits):
    return C.qmv_threads(H // 8, 2), C.qmv_threads(K * I // 8, 2)


def qmv_set(tag, shapes, geoms):
    for (N, K, bits, sdt) in shapes:
        for g in geoms:
            C.QMV_GEOM = g
            c = C.case_qmv(N, K, bits, 64, sdt)
            run('%s qmv %d-bit %s %d -> %d' % (tag, bits, sdt, K, N), c, c.launch)
            del c
            C.free_all()
    C.QMV_GEOM = None


def fixed(tx, ty):
    return lambda N, K, bits: ((N + 8 * ty - 1) // (8 * ty), (tx, ty, 1))


def fixed(tx, ty, bpt):
    return lambda N, K, bits: (((N + 7) // 8 + bpt - 1) // bpt, (tx, ty, 1))


BIG = (248320, 1024, 4, 'float32')
if not only or 'qmv' in only:
    if OLD:
        C.TEXT['quant'] = text('quant', OLD)
        qmv_set('old', [BIG, (1024, 3584, 4, 'float32'), (3584, 1024, 4, 'float32'), (248320, 1024, 8, 'float32'),
                        (248320, 1024, 4, 'bfloat16')], [old_qmv])
        C.TEXT.pop('quant')
    qmv_set('new', [BIG], [fixed(32, 4, 16), fixed(32, 8, 16), fixed(32, 4, 32), fixed(32, 2, 16), fixed(32, 8, 64)])
    qmv_set('new', [(1024, 3584, 4, 'float32')], [fixed(128, 1, 1), fixed(256, 1, 1)])
    qmv_set('new', [(3584, 1024, 4, 'float32')], [fixed(32, 1, 1), fixed(32, 4, 4), fixed(64, 1, 1), fixed(32, 2, 1)])
    qmv_set('new', [(248320, 1024, 8, 'float32'), (248320, 1024, 4, 'bfloat16')], [None])

if not only or 'qswitch' in only:
    if OLD:
        C.TEXT['quant'] = text('quant', OLD)
        C.QSW_GEOM = old_qsw
        c = C.case_qswitch(1, 2048, 512, 512, 10)
        run('old qswitch_glu Qwen3-Next k=10', c, c.launch)
        del c
        C.free_all()
        C.TEXT.pop('quant')
    QNEW = text('quant', M.KDIR)
    ACT = 'if (bits != 0 && q_staged(bits, p.H)) {'
    DOWN = 'switch (q_staged(down.bits, p.I) ? down.bits : 0) {'
    assert ACT in QNEW and DOWN in QNEW
    for sa, sd, ta, td in ((1, 1, 64, 128), (1, 1, 128, 128), (0, 1, 128, 128), (1, 0, 64, 256), (1, 0, 128, 256),
                           (0, 0, 128, 256)):
        t = QNEW if sa else QNEW.replace(ACT, 'if (false) {')
        t = t if sd else t.replace(DOWN, 'switch (0) {')
        C.TEXT['quant'] = t
        C.QSW_GEOM = lambda T, H, I, K, bits: ((ta, 1, 1), (td, 1, 1))
        c = C.case_qswitch(1, 2048, 512, 512, 10)
        run('new qswitch_glu k=10, act %s %d, down %s %d threads' % ('staged' if sa else 'units', ta,
                                                                    'staged' if sd else 'units', td), c, c.launch)
        del c
        C.free_all()
    C.TEXT.pop('quant')
    C.QSW_GEOM = None

if not only or 'sdpa' in only:
    new = text('sdpa', M.KDIR)
    variants = [('new', new, 512), ('new groups 256', new, 256), ('new groups 128', new, 128),
                ('new MAXG 2 groups 512', new.replace('#define SDPA_MAXG 4', '#define SDPA_MAXG 2'), 512)]
    if OLD:
        variants.insert(0, ('old', text('sdpa', OLD), 512))
        variants.insert(1, ('old groups 256', text('sdpa', OLD), 256))
    split = C.sdpa_split
    for name, t, groups in variants:
        C.TEXT['sdpa'] = t
        C.SDPA_MAXG = 2 if 'MAXG 2' in name else 4
        C.sdpa_split = lambda tgs, skv, min_chunk=32, groups=groups: split(tgs, skv, min_chunk, groups)
        for skv in (4096, 32768):
            c = C.case_sdpa(1, 8, 2, 1, skv, 256, 256)
            run('%s sdpa %d keys' % (name, skv), c, c.launch)
            del c
            C.free_all()
    C.sdpa_split = split
    C.SDPA_MAXG = 4
    C.TEXT.pop('sdpa')
