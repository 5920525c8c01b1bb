# Issue 21 experiments, one call timing every variant (median of 20, cold L2) against the
# kernels of an earlier tree (OLD_KERNELS: its kernels folder; EXP picks the families):
# sdpa's keys a step and key split; qswitch_glu's pair, each launch also timed alone;
# the staged qmv's grid and its loads alone. docs/h200/run12-exp*.log and run13-exp*.log
# hold the runs (run13-exp1: act with x loaded by each lane from device memory, since
# replaced by the staging; run13-exp2: the act pass's shapes and the staged qmv's grid;
# run14-exp*: below; run15-exp*.log: tree c35ce3e, whose act chunks pass also loaded its
# share of the routed expert's down weights so the down pass would find them in L2, with
# OLD_KERNELS main's b0f4187; "launch 2 alone" follows an L2 flush, so only the pair can
# show such warming).
import os

import cases as C
import msl2cuda as M

OLD = os.environ.get('OLD_KERNELS')
ONLY = os.environ.get('EXP', 'qswitch,qmv').split(',')  # also sdpa, moe


def text(fam, kdir):
    """fam's MSL as Metal compiles it from the tree kdir (its includes from there too)."""
    return M.source(fam, kdir)


def run(name, c, L):
    L()
    C.sync()
    (err, nn), note = c.check()
    t, _ = C.timed(L, reps=20, warm=3)
    print('%-56s %9.1f us  err %.1e NaN %d  %s  %s%s' % (name, t, err, nn, L.geom(), L.attrs(),
                                                        '  ' + note if note else ''), flush=True)
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


def swap_fn(t, start, end, body):
    """t with the text from start up to and including end replaced by body."""
    a = t.index(start)
    b = t.index(end, a) + len(end)
    return t[:a] + body + t[b:]


# docs/h200/run14-exp*.log, on the trees named there: exp1 (16e9d24) a fused qswitch_glu
# pair (qswitch_fused: 32 act rows a threadgroup, then their chunk of every down row, the
# partials added by qswitch_sum) and x read as float4s; exp2 (docs/h200/run14-exp2-quant
# .metal.txt) codes read in place up to bit 20 and the act pass's first weights loaded
# before x is staged; exp3 (c653c38) qmv_one_chunk (x in registers for all of a slot's
# blocks, the next block's weights loaded before this one's are added) and the act
# pass's chunk sums taken in the lane. What follows times this tree against OLD_KERNELS.
if 'qswitch' in ONLY:
    for tag, kd in (('old', OLD), ('new', None)) if OLD else (('new', None),):
        if kd:
            C.TEXT['qswitch'] = text('qswitch', kd)
        for k in (10, 1):
            for sdt in ('float32', 'bfloat16') if k == 10 else ('float32',):
                c = C.case_qswitch(1, 2048, 512, 512, k, 4, 64, sdt)
                name = '%s pair qswitch_glu %s k=%d' % (tag, sdt, k)
                run(name, c, c.launch)
                if sdt == 'float32':
                    seq_parts(name, c)
                C.free_all()
        C.TEXT.pop('qswitch', None)
if 'qmv' in ONLY:
    # The staged qmv on grids of G threadgroups of ty slots, against OLD_KERNELS, and its
    # loads without the decoding.
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
    for G, ty in ((None, 8), (132, 16)):
        g = geom(G, ty)
        for bits, sdt in shapes if G is None else shapes[:1]:
            qmv('new staged, ' + g, 248320, 1024, bits, sdt)
    # The loads without the decoding (each chunk's words xor-ed, one multiply): what the
    # memory side of this access pattern takes alone (wrong results, timing only).
    geom(None, 8)
    C.TEXT['quant'] = swap_fn(text('quant', M.KDIR), 'inline float q_chunk_dot(', '    return d0 + d1;\n}\n',
                              """inline float q_chunk_dot(thread const uint* wd, thread const float* xc) {
    uint v = 0u;
    for (int i = 0; i < B; i++) {
        v ^= wd[i];
    }
    return float(v & 255u) * xc[0];
}
""")
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
