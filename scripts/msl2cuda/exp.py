# Issue 21 experiments, one call timing every variant (median of 20, cold L2) against the
# kernels of an earlier tree (OLD_KERNELS: its kernels folder; EXP picks the families):
# sdpa's keys a step and key split; qswitch_glu's act pass (where x's chunk sums are
# taken), each launch also timed alone; the staged qmv's block loop and grid. docs/h200/run12-exp*.log and run13-exp*.log
# hold the runs (run13-exp1: act with x loaded by each lane from device memory, since
# replaced by the staging; run13-exp2: the act pass's shapes and the staged qmv's grid;
# run14-exp*: this file's variants).
import os
import re

import cases as C
import msl2cuda as M

OLD = os.environ.get('OLD_KERNELS')
ONLY = os.environ.get('EXP', 'qswitch,qmv').split(',')  # also sdpa, moe


def text(fam, kdir):
    return open(os.path.join(kdir, fam + '.metal')).read()


def run(name, c, L):
    L()
    C.sync()
    (err, nn), _ = c.check()
    t, _ = C.timed(L, reps=20, warm=3)
    print('%-56s %9.1f us  err %.1e NaN %d  %s  %s' % (name, t, err, nn, L.geom(), L.attrs()), flush=True)
    return t


def sdpa(tag, t, groups):
    split = C.sdpa_split
    C.TEXT['sdpa'] = t
    C.sdpa_split = lambda tgs, skv, min_chunk=32, groups=groups: split(tgs, skv, min_chunk, groups)
    for skv in (4096, 32768):
        c = C.case_sdpa(1, 8, 2, 1, skv, 256, 256)
        run('%s sdpa %d keys, %d groups' % (tag, skv, groups), c, c.launch)
        C.free_all()
    C.sdpa_split = split
    C.TEXT.pop('sdpa')


def qswitch(tag, geom=None, k=10):
    C.QSWITCH = geom
    c = C.case_qswitch(1, 2048, 512, 512, k, 4, 64, 'float32')
    run('%s qswitch_glu k=%d' % (tag, k), c, c.launch)
    C.QSWITCH = None
    C.free_all()


def qmv(tag, N, K, bits, sdt):
    c = C.case_qmv(N, K, bits, 64, sdt)
    run('%s qmv %d-bit %s %d -> %d' % (tag, bits, sdt, K, N), c, c.launch)
    C.free_all()


LOOP_OLD = '''    for (int j = j0 + int(sg) * SDPA_KB; j < s.j1; j += SDPA_SG * SDPA_KB) {
        float kv[SDPA_KB][SDPA_MAXC];
        float vv[SDPA_KB][SDPA_MAXC];
        sdpa_load_keys(s, j, lane, kv, vv);
        sdpa_step(s, j, qv, acc, ml, lw, lane, kv, vv);
    }
'''
LOOP_NEW = '''    // Two buffers of keys: the next step's are loaded before this step's are used, so a
    // simdgroup always has a step's loads in flight while it computes.
    int step = SDPA_SG * SDPA_KB;
    float ka[SDPA_KB][SDPA_MAXC];
    float va[SDPA_KB][SDPA_MAXC];
    float kn[SDPA_KB][SDPA_MAXC];
    float vn[SDPA_KB][SDPA_MAXC];
    sdpa_load_keys(s, j0 + int(sg) * SDPA_KB, lane, ka, va);
    for (int j = j0 + int(sg) * SDPA_KB; j < s.j1; j += 2 * step) {
        sdpa_load_keys(s, j + step, lane, kn, vn);
        sdpa_step(s, j, qv, acc, ml, lw, lane, ka, va);
        if (j + step >= s.j1) {
            break;
        }
        sdpa_load_keys(s, j + 2 * step, lane, ka, va);
        sdpa_step(s, j + step, qv, acc, ml, lw, lane, kn, vn);
    }
'''

if 'sdpa' in ONLY:
    # The kernel's loop is LOOP_NEW (two buffers, docs/h200/run12-exp2.log); LOOP_OLD, one.
    pre = text('sdpa', M.KDIR)
    assert LOOP_NEW in pre
    one = pre.replace(LOOP_NEW, LOOP_OLD)
    if OLD:
        sdpa('old', text('sdpa', OLD), 256)
    for kb in (4, 8, 2):
        sdpa('new KB %d' % kb, one.replace('#define SDPA_KB 4', '#define SDPA_KB %d' % kb), 256)
    sdpa('new KB 4', one, 512)
    for kb in (2, 4):
        sdpa('new KB %d prefetch' % kb, pre.replace('#define SDPA_KB 4', '#define SDPA_KB %d' % kb), 256)
    sdpa('new KB 4 prefetch', pre, 512)


def seq_parts(tag, c):
    """Each launch of a multi-dispatch case timed alone (the first one writes the scratch
    the second reads; timed after one full run)."""
    c.launch()
    C.sync()
    for i, l in enumerate(getattr(c.launch, 'ls', ())):
        t, _ = C.timed(l, reps=20, warm=3)
        print('%-56s %9.1f us  %s  %s' % ('%s, launch %d alone' % (tag, i + 1), t, l.geom(), l.attrs()), flush=True)


def sub(t, name, v):
    """t with quant.metal's #define name set to v."""
    t2 = re.sub(r'#define %s \d+' % name, '#define %s %d' % (name, v), t)
    assert t2 != t or ('#define %s %d' % (name, v)) in t, name
    return t2


def swap_fn(t, start, end, body):
    """t with the text from start up to and including end replaced by body."""
    a = t.index(start)
    b = t.index(end, a) + len(end)
    return t[:a] + body + t[b:]


if 'qswitch' in ONLY:
    # The act/down pair by chunks, the act pass's chunk sums of x taken in each lane from
    # the staged values (QSW_XSUM 1) or by the staging (0: simd_sum a staged value, as in
    # OLD_KERNELS); OLD_KERNELS' pair. (run14-exp2: QSW_PF, the act pass's weights loaded
    # before x is staged; its text is docs/h200/run14-exp2-quant.metal.txt.)
    q = text('quant', M.KDIR)
    if OLD:
        C.TEXT['quant'] = text('quant', OLD)
        for k in (10, 1):
            c = C.case_qswitch(1, 2048, 512, 512, k, 4, 64, 'float32')
            run('old pair qswitch_glu k=%d' % k, c, c.launch)
            seq_parts('old pair qswitch_glu k=%d' % k, c)
            C.free_all()
        C.TEXT.pop('quant')
    for xsum in (1, 0):
        C.TEXT['quant'] = sub(q, 'QSW_XSUM', xsum)
        for k in (10, 1):
            for sdt in ('float32', 'bfloat16') if k == 10 and xsum == 1 else ('float32',):
                c = C.case_qswitch(1, 2048, 512, 512, k, 4, 64, sdt)
                tag = 'new XSUM %d qswitch_glu %s k=%d' % (xsum, sdt, k)
                run(tag, c, c.launch)
                if sdt == 'float32':
                    seq_parts(tag, c)
                C.free_all()
    C.TEXT.pop('quant')
if 'qmv' in ONLY:
    # The staged qmv (uint4 chunk loads) with K <= 1024 taken by qmv_one_chunk (QMV_ONE 1:
    # x read once for all of a slot's blocks; QMV_PF 1: the next block's weights loaded
    # before this one's are added) or by the general block loop (QMV_ONE 0), on grids of
    # G threadgroups of ty slots, against OLD_KERNELS. (run14-exp2: codes read in place
    # up to bit 20, the text of docs/h200/run14-exp2-quant.metal.txt.)
    def geom(G, ty):
        C.QMV_GEOM = None if G is None else (lambda N, K, bits: ('qmv_staged', G, (32, ty, 1)))
        return 'Encode' if G is None else '%d x %d slots' % (G, ty)
    shapes = ((4, 'float32'), (8, 'float32'), (4, 'bfloat16'))
    if OLD:
        C.TEXT['quant'] = text('quant', OLD)
        geom(None, 8)
        for bits, sdt in shapes:
            qmv('old staged, Encode', 248320, 1024, bits, sdt)
        C.TEXT.pop('quant')
    q = text('quant', M.KDIR)
    for one, pf, grids in ((0, 0, ((None, 8), (132, 16))), (1, 0, ((None, 8), (132, 16))),
                           (1, 1, ((132, 8), (None, 8), (132, 6)))):
        C.TEXT['quant'] = sub(sub(q, 'QMV_ONE', one), 'QMV_PF', pf)
        for G, ty in grids:
            g = geom(G, ty)
            for bits, sdt in shapes if (G, ty) == grids[0] else shapes[:1]:
                qmv('new ONE %d PF %d staged, %s' % (one, pf, g), 248320, 1024, bits, sdt)
    C.TEXT.pop('quant')
    for N, K in ((3584, 1024), (1024, 3584)):
        geom(None, 4)
        qmv('new (Encode)', N, K, 4, 'float32')
    C.QMV_GEOM = None
if 'moe' in ONLY:
    for k in (1, 10):
        c = C.case_switch_glu(1, 2048, 512, 512, k)
        run('new switch_glu k=%d' % k, c, c.launch)
        C.free_all()
