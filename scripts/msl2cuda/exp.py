# Issue 21 experiments, one call timing every variant (median of 20, cold L2) against the
# kernels of an earlier tree (OLD_KERNELS: its kernels folder; EXP picks the families):
# sdpa's keys a step and key split; qswitch_glu's act threadgroup (QSW_SG simdgroups of
# QSW_RS rows, QSW_CH chunks in flight), each launch also timed alone; the staged qmv's
# grid, and its loads without the decoding. docs/h200/run12-exp*.log and run13-exp*.log
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


QSW_FUSED_TPG = (256, 1, 1)


def sub(t, name, v):
    """t with quant.metal's #define name set to v."""
    t2 = re.sub(r'#define %s \d+' % name, '#define %s %d' % (name, v), t)
    assert t2 != t or ('#define %s %d' % (name, v)) in t, name
    return t2


if 'qswitch' in ONLY:
    # The fused pair (qswitch_fused + qswitch_sum) against the act/down pair by chunks of
    # this tree (QSW_FUSED=False) and OLD_KERNELS' pair; the fused pair's simdgroup rows
    # (QSW_FRS: 256 threads at 4, 512 at 2, 128 at 8), down rows in flight a thread
    # (QSW_FDR) and loads in flight a lane of qswitch_sum (QSW_SUMU).
    q = text('quant', M.KDIR)
    if OLD:
        C.TEXT['quant'], C.QSW_RS = text('quant', OLD), 2
        for k in (10, 1):
            C.QSWITCH = (True, (128, 1, 1), C.qmv_threads(k * 512 // 32, 1))
            c = C.case_qswitch(1, 2048, 512, 512, k, 4, 64, 'float32')
            run('old pair qswitch_glu k=%d' % k, c, c.launch)
            seq_parts('old pair qswitch_glu k=%d' % k, c)
            C.free_all()
        C.QSWITCH = None
        C.TEXT.pop('quant')
    C.QSW_FUSED = False
    for k in (10, 1):
        c = C.case_qswitch(1, 2048, 512, 512, k, 4, 64, 'float32')
        run('new pair (vector loads) qswitch_glu k=%d' % k, c, c.launch)
        C.free_all()
    C.QSW_FUSED = True
    for frs, fdr, su in ((4, 8, 4), (2, 8, 4), (8, 8, 4), (4, 4, 4), (4, 16, 4), (4, 8, 8)):
        t = sub(sub(sub(q, 'QSW_FRS', frs), 'QSW_FDR', fdr), 'QSW_SUMU', su)
        C.TEXT['quant'] = t
        C.QSW_FTPG = 32 * 32 // frs
        for k in (10, 1):
            for sdt in ('float32', 'bfloat16') if (frs, fdr, su) == (4, 8, 4) and k == 10 else ('float32',):
                c = C.case_qswitch(1, 2048, 512, 512, k, 4, 64, sdt)
                tag = 'fused FRS %d FDR %d SUMU %d qswitch_glu %s k=%d' % (frs, fdr, su, sdt, k)
                run(tag, c, c.launch)
                if (frs, fdr, su) == (4, 8, 4) or k == 10:
                    seq_parts(tag, c)
                C.free_all()
    C.TEXT.pop('quant')
    C.QSW_FUSED, C.QSW_FTPG = None, 256
if 'qmv' in ONLY:
    # The staged qmv with each chunk's words loaded as uint4s and x read from threadgroup
    # memory as float4s, on grids of G threadgroups of ty slots, against OLD_KERNELS; the
    # same with scalar x reads (QMV_XPAD 33); and its loads without the decoding.
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
    for G, ty in ((None, 8), (132, 16), (528, 4)):
        g = geom(G, ty)
        for bits, sdt in shapes if G is None else shapes[:1]:
            qmv('new staged, ' + g, 248320, 1024, bits, sdt)
    geom(None, 8)
    # x read as 32 scalars (the old padding), the words still as uint4s
    a = q.index('inline float q_chunk_x(')
    b = q.index('    return cs[c];\n}\n', a)
    C.TEXT['quant'] = sub(q[:a] + """inline float q_chunk_x(threadgroup const float* xs, threadgroup const float* cs, int c, thread float* xc) {
    for (int j = 0; j < 32; j++) {
        xc[j] = xs[c * QMV_XPAD + j];
    }
""" + q[b:], 'QMV_XPAD', 33).replace('QMV_XMAX / 32 * QMV_XPAD / 4]', '(QMV_XMAX / 32 * QMV_XPAD + 3) / 4]')
    for bits, sdt in shapes[:1]:
        qmv('new staged, scalar x reads, Encode', 248320, 1024, bits, sdt)
    # The loads without the decoding (each chunk's words xor-ed, one multiply): what the
    # memory side of this access pattern takes alone (wrong results, timing only).
    a = q.index('inline float q_chunk_dot(')
    b = q.index('    return d0 + d1;\n}\n', a) + len('    return d0 + d1;\n}\n')
    C.TEXT['quant'] = q[:a] + """inline float q_chunk_dot(thread const uint* wd, thread const float* xc) {
    uint v = 0u;
    for (int i = 0; i < B; i++) {
        v ^= wd[i];
    }
    return float(v & 255u) * xc[0];
}
""" + q[b:]
    qmv('loads only (timing, not a kernel), Encode', 248320, 1024, 4, 'float32')
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
