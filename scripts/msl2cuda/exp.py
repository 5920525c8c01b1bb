# Issue 21 experiments, one call timing every variant (median of 20, cold L2) against the
# kernels of an earlier tree (OLD_KERNELS: its kernels folder): sdpa's keys a step and
# key split, qswitch_glu's entries and threadgroup widths, the staged qmv with 16-byte
# weight loads, each lane's x chunk read once a row. docs/h200/run12-exp*.log hold the
# runs (exp1: before the parameters were read into registers; exp2: after; exp3: with
# qswitch_act_chunks's gate and up rows in two simdgroups, since reverted).
import os

import cases as C
import msl2cuda as M

OLD = os.environ.get('OLD_KERNELS')
ONLY = os.environ.get('EXP', 'sdpa,qswitch,qmv,moe').split(',')


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


WIDE_OLD = '''        for (int i = 0; i < B; i++) {
            wd[r][i] = wp[o * rw + i];
        }
'''
WIDE_NEW = '''        for (int i = 0; i < B; i += 4) {
            uint4 v4 = *((const device uint4*)(wp + o * rw + i));
            wd[r][i % B] = v4.x;
            wd[r][(i + 1) % B] = v4.y;
            wd[r][(i + 2) % B] = v4.z;
            wd[r][(i + 3) % B] = v4.w;
        }
'''

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

# The staged qmv with each lane's x chunk read from threadgroup memory once per x row
# (K <= 32 * tx: one chunk a lane), not once per row block.
HOIST = [('''            q_stage_x<B>(xr, p.K, xs, cs, tid, lane, nthr);
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
''', '''            q_stage_x<B>(xr, p.K, xs, cs, tid, lane, nthr);
            threadgroup_barrier(mem_flags::mem_threadgroup);
        }
        bool one = staged && p.K / 32 <= int(tx);  // uniform
        float xc1[32];
        float xsum1 = 0.0f;
        if (one && int(bt) < p.K / 32) {
            xsum1 = q_chunk_x(xs, cs, int(bt), xc1);
        }
'''), ('''            if (staged) {
                for (int c = int(bt); c < p.K / 32; c += int(tx)) {''', '''            if (one) {
                if (int(bt) < p.K / 32) {
                    q_rows_chunk<S, B>(m, nb, last, int(bt), xc1, xsum1, 1.0f, acc);
                }
            } else if (staged) {
                for (int c = int(bt); c < p.K / 32; c += int(tx)) {''')]

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
if 'qswitch' in ONLY:
    if OLD:
        C.TEXT['quant'] = text('quant', OLD)
        qswitch('old', (False, (128, 1, 1), (256, 1, 1)))
        C.TEXT.pop('quant')
    qswitch('new (default)')
    qswitch('new (default)', k=1)
    for ta, td in ((64, 160), (32, 256), (32, 128)):
        qswitch('new act %d, down %d threads' % (ta, td), (True, (ta, 1, 1), (td, 1, 1)))
    qswitch('new, unit entries', (False, (128, 1, 1), (256, 1, 1)))
if 'qmv' in ONLY:
    q = text('quant', M.KDIR)
    assert WIDE_OLD in q
    h = q
    for a, b in HOIST:
        assert a in h
        h = h.replace(a, b)
    vs = [('new staged', q), ('new staged, x chunk once a row', h)]
    if os.environ.get('EXP_WIDE'):
        vs.append(('new staged, 16-byte loads', q.replace(WIDE_OLD, WIDE_NEW)))
    for tag, t in vs:
        C.TEXT['quant'] = t
        for bits, sdt in ((4, 'float32'), (8, 'float32'), (4, 'bfloat16')):
            qmv(tag, 248320, 1024, bits, sdt)
        C.TEXT.pop('quant')
if 'moe' in ONLY:
    for k in (1, 10):
        c = C.case_switch_glu(1, 2048, 512, 512, k)
        run('new switch_glu k=%d' % k, c, c.launch)
        C.free_all()
