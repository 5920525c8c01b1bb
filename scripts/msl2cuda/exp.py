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


def qswitch_set(tag, parts=(10,)):
    """qswitch_glu at Qwen3-Next's sizes: top-10 with float32 and bfloat16 scales, top-1;
    for the top-k in parts, each launch of the float32 pair also timed alone."""
    for k in (10, 1):
        for sdt in ('float32', 'bfloat16') if k == 10 else ('float32',):
            c = C.case_qswitch(1, 2048, 512, 512, k, 4, 64, sdt)
            name = '%s pair qswitch_glu %s k=%d' % (tag, sdt, k)
            run(name, c, c.launch)
            if sdt == 'float32' and k in parts:
                seq_parts(name, c)
            C.free_all()


def qmv_grid(G, ty):
    """The staged qmv (the qmv_staged entry) on G threadgroups of ty slots; G None: Encode's."""
    C.QMV_GEOM = None if G is None else (lambda N, K, bits: ('qmv_staged', G, (32, ty, 1)))
    return 'Encode' if G is None else '%d x %d slots' % (G, ty)


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
        qswitch_set(tag, parts=(10, 1))
        C.TEXT.pop('qswitch', None)
if 'qmv' in ONLY:
    # The staged qmv on grids of G threadgroups of ty slots, against OLD_KERNELS, and its
    # loads without the decoding.
    shapes = ((4, 'float32'), (8, 'float32'), (4, 'bfloat16'))
    if OLD:
        C.TEXT['quant'] = text('quant', OLD)
        qmv_grid(None, 8)
        for bits, sdt in shapes:
            qmv('old staged, Encode', 248320, 1024, bits, sdt)
        C.TEXT.pop('quant')
    for G, ty in ((None, 8), (132, 16)):
        g = qmv_grid(G, ty)
        for bits, sdt in shapes if G is None else shapes[:1]:
            qmv('new staged, ' + g, 248320, 1024, bits, sdt)
    # The loads without the decoding (each chunk's words xor-ed, one multiply): what the
    # memory side of this access pattern takes alone (wrong results, timing only).
    qmv_grid(None, 8)
    C.TEXT['quant'] = swap_fn(text('quant', M.KDIR), 'inline float q_chunk_dot(', '    return d;\n}\n',
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
        qmv_grid(None, 4)
        qmv('new (Encode)', N, K, 4, 'float32')
    C.QMV_GEOM = None
if 'moe' in ONLY:
    for k in (1, 10):
        c = C.case_switch_glu(1, 2048, 512, 512, k)
        run('new switch_glu k=%d' % k, c, c.launch)
        C.free_all()


# run16 (docs/h200/run16-exp1.log; the tree b432ac1 with QSW_DR): qswitch_glu's down pass with fewer outputs a threadgroup
# (QSW_DR: more, shorter warps; Nsight had 8.2 us at 0.28 issued a scheduler a cycle,
# 2.4 warps a scheduler), and the act pass with each lane loading its x chunks from
# device memory as float4s (no staging, no barrier); the staged qmv with the x of each
# word read from threadgroup memory as it is used (fewer registers), on several grids.
ACT_DX = '''template <typename S>
inline void qswitch_act_chunks_impl(const device float* x, QMat<S> gate, QMat<S> up, const device int* idx,
                                    device float* act, constant QSwitchGLUParams& p, threadgroup float* xs,
                                    threadgroup float* cs, uint3 tg, uint tid, uint lane, uint sg, uint nthr) {
    int tj = int(tg.y);
    if (tj >= p.T * p.K) {
        return;
    }
    int e = q_index(idx[tj], p.E);
    const device float* xr = x + size_t(tj / p.K) * size_t(p.H);
    int i0 = (int(tg.x) * int(nthr / 32) + int(sg)) * QSW_RS;
    int rows = min(QSW_RS, p.I - i0);
    if (rows <= 0) {
        return;
    }
    float ga[QSW_RS];
    float ua[QSW_RS];
    for (int r = 0; r < QSW_RS; r++) {
        ga[r] = 0.0f;
        ua[r] = 0.0f;
    }
    size_t n0 = size_t(max(e, 0)) * size_t(p.I) + size_t(i0);
    int nch = gate.cols / 32;
    for (int c = int(lane); c < nch; c += 32) {
        uint gw[QSW_RS * 4];
        uint uw[QSW_RS * 4];
        float gsc[QSW_RS], gbi[QSW_RS], usc[QSW_RS], ubi[QSW_RS];
        q_chunk_load<S, 4, QSW_RS>(gate, n0, rows - 1, c, gw, gsc, gbi);
        q_chunk_load<S, 4, QSW_RS>(up, n0, rows - 1, c, uw, usc, ubi);
        float xc[32];
        float xsum = q_chunk_xd<4>(xr, c, xc);
        q_chunk_add<4, QSW_RS>(gw, gsc, gbi, xc, xsum, 1.0f, ga);
        q_chunk_add<4, QSW_RS>(uw, usc, ubi, xc, xsum, 1.0f, ua);
    }
    for (int r = 0; r < QSW_RS; r++) {
        float g = simd_sum(ga[r]);
        float u = simd_sum(ua[r]);
        if (int(lane) == r && r < rows) {
            act[size_t(tj) * size_t(p.I) + size_t(i0 + r)] = e < 0 ? 0.0f : (g / (1.0f + exp(-g))) * u;
        }
    }
}
'''

QMV_WORDS = '''template <typename S, int B>
inline void q_rows_chunk_tg(QMat<S> m, size_t n0, int last, int c, threadgroup const float* xcp, float xsum,
                            thread float* acc) {
    uint wd[QMV_ROWS * B];
    float sc[QMV_ROWS];
    float bi[QMV_ROWS];
    q_chunk_load<S, B, QMV_ROWS>(m, n0, last, c, wd, sc, bi);
    float d[QMV_ROWS];
    for (int r = 0; r < QMV_ROWS; r++) {
        d[r] = 0.0f;
    }
    threadgroup const float4* x4 = (threadgroup const float4*)xcp;
    for (int i = 0; i < B; i++) {
        float xv[32 / B];
        for (int q = 0; q < 8 / B; q++) {
            float4 v = x4[i * (8 / B) + q];
            xv[4 * q] = v.x;
            xv[4 * q + 1] = v.y;
            xv[4 * q + 2] = v.z;
            xv[4 * q + 3] = v.w;
        }
        for (int r = 0; r < QMV_ROWS; r++) {
            uint lo = (wd[r * B + i] & 0xFFFFu) | 0x4B000000u;
            uint hi = (wd[r * B + i] >> 16) | 0x4B000000u;
            for (int j = 0; j < 16 / B; j++) {
                uint keep = 0x4B000000u | (((1u << B) - 1u) << (B * j));
                d[r] = fma(xv[j], as_type<float>(lo & keep) - 8388608.0f, d[r]);
                d[r] = fma(xv[16 / B + j], as_type<float>(hi & keep) - 8388608.0f, d[r]);
            }
        }
    }
    for (int r = 0; r < QMV_ROWS; r++) {
        acc[r] += fma(sc[r], d[r], bi[r] * xsum);
    }
}
'''
QMV_CALL_OLD = '''                    float xc[32];
                    float xsum = q_chunk_x(xs, cs, c, xc);
                    q_rows_chunk<S, B>(m, size_t(nf), QMV_ROWS - 1, c, xc, xsum, 1.0f, acc);'''
QMV_CALL_NEW = '''                    q_rows_chunk_tg<S, B>(m, size_t(nf), QMV_ROWS - 1, c, xs + c * QMV_XPAD, cs[c], acc);'''

if 'qsw16' in ONLY:
    base = text('qswitch', M.KDIR)
    dx = swap_fn(base, 'template <typename S>\ninline void qswitch_act_chunks_impl(', '\n}\n', ACT_DX)
    for tag, t, dr in (('main', base, 8), ('DR 4', base, 4), ('DR 2', base, 2), ('act dx, DR 8', dx, 8),
                       ('act dx, DR 4', dx, 4), ('main again', base, 8)):
        C.TEXT['qswitch'] = t.replace('#define QSW_DR 8', '#define QSW_DR %d' % dr)
        C.QSW_DR = dr
        qswitch_set(tag)
    C.TEXT.pop('qswitch')
    C.QSW_DR = 8
if 'qmv16' in ONLY:
    base = text('quant', M.KDIR)
    words = base.replace(QMV_CALL_OLD, QMV_CALL_NEW)
    assert words != base
    words = words.replace('// q_chunk_x4 loads staged chunk c', QMV_WORDS + '\n// q_chunk_x4 loads staged chunk c')
    for tag, t in (('main', base), ('words', words)):
        C.TEXT['quant'] = t
        for G, ty in ((None, 8), (132, 16), (660, 4), (528, 4), (396, 8)):
            g = qmv_grid(G, ty)
            for bits, sdt in ((4, 'float32'), (4, 'bfloat16'), (8, 'float32')) if G is None else ((4, 'float32'),):
                qmv('%s, %s' % (tag, g), 248320, 1024, bits, sdt)
        C.QMV_GEOM = None
    C.TEXT['quant'] = base
    qmv('main again, Encode', 248320, 1024, 4, 'float32')
    C.TEXT.pop('quant')


# run16, second call (run16-exp2.log, the same tree): the decoding of a chunk (q_chunk_dot). 'or': the low half word's
# exponent set by one or, not an and and an or ((w | c) & (c | m) = c | (w & m): the same
# floats). 'opq': the low codes read in place, (w & m) | c with c a run-time value (so
# the compiler keeps it in a register and each code is one and-or: an instruction holds
# one immediate), no low half word made at all.
DOT_OLD = '''        uint lo = (wd[i] & 0xFFFFu) | 0x4B000000u;
        uint hi = (wd[i] >> 16) | 0x4B000000u;
        for (int j = 0; j < 16 / B; j++) {
            uint keep = 0x4B000000u | (((1u << B) - 1u) << (B * j));
            d0 = fma(xc[i * (32 / B) + j], as_type<float>(lo & keep) - 8388608.0f, d0);'''
DOT_OR = DOT_OLD.replace('uint lo = (wd[i] & 0xFFFFu) | 0x4B000000u;', 'uint lo = wd[i] | 0x4B000000u;')
DOT_OPQ = '''        uint hi = (wd[i] >> 16) | c23;
        for (int j = 0; j < 16 / B; j++) {
            uint keep = 0x4B000000u | (((1u << B) - 1u) << (B * j));
            d0 = fma(xc[i * (32 / B) + j], as_type<float>((wd[i] & (((1u << B) - 1u) << (B * j))) | c23) - 8388608.0f, d0);'''


def opq(t):
    reps = [(DOT_OLD, DOT_OPQ),
            ('inline float q_chunk_dot(thread const uint* wd, thread const float* xc) {',
             'inline float q_chunk_dot(thread const uint* wd, thread const float* xc, uint c23) {'),
            ('thread const float* xc, float xsum, float f, thread float* acc) {',
             'thread const float* xc, float xsum, float f, thread float* acc, uint c23) {'),
            ('q_chunk_dot<B>(wd + r * B, xc)', 'q_chunk_dot<B>(wd + r * B, xc, c23)'),
            ('''inline void q_rows_chunk(QMat<S> m, size_t n0, int last, int c, thread const float* xc, float xsum, float f,
                         thread float* acc) {''',
             '''inline void q_rows_chunk(QMat<S> m, size_t n0, int last, int c, thread const float* xc, float xsum, float f,
                         thread float* acc) {
    uint c23 = 0x4B000000u | uint(m.cols >> 31);'''),
            ('q_chunk_add<B, QMV_ROWS>(wd, sc, bi, xc, xsum, f, acc);', 'q_chunk_add<B, QMV_ROWS>(wd, sc, bi, xc, xsum, f, acc, c23);'),
            ('q_chunk_add<B, QSW_RS>(gw + o * B, gsc + o, gbi + o, xc, xsum, f, ga);',
             'q_chunk_add<B, QSW_RS>(gw + o * B, gsc + o, gbi + o, xc, xsum, f, ga, c23);'),
            ('q_chunk_add<B, QSW_RS>(uw + o * B, usc + o, ubi + o, xc, xsum, f, ua);',
             'q_chunk_add<B, QSW_RS>(uw + o * B, usc + o, ubi + o, xc, xsum, f, ua, c23);'),
            ('q_chunk_add<B, QSW_DR>(wd, ws, wb, xc, xs, sc, d);', 'q_chunk_add<B, QSW_DR>(wd, ws, wb, xc, xs, sc, d, c23);'),
            ('    int nch = gate.cols / 32;\n', '    int nch = gate.cols / 32;\n    uint c23 = 0x4B000000u | uint(gate.cols >> 31);\n'),
            ('    int chunks = I / 32;\n', '    int chunks = I / 32;\n    uint c23 = 0x4B000000u | uint(I >> 31);\n')]
    for a, b in reps:
        if a in t:
            t = t.replace(a, b)
    return t


if 'dec16' in ONLY:
    qs, qm = text('qswitch', M.KDIR), text('quant', M.KDIR)
    assert DOT_OLD in qs and DOT_OLD in qm, 'dec16 patches the decoding of b432ac1 (OLD_KERNELS does not apply here)'
    variants = (('main', qs, qm), ('or', qs.replace(DOT_OLD, DOT_OR), qm.replace(DOT_OLD, DOT_OR)),
                ('opq', opq(qs), opq(qm)), ('main again', qs, qm), ('or again', qs.replace(DOT_OLD, DOT_OR), qm.replace(DOT_OLD, DOT_OR)),
                ('opq again', opq(qs), opq(qm)))
    if os.environ.get('DEC16_SAVE'):
        for tag, a, b in variants[:3]:
            open(os.path.join(os.environ['DEC16_SAVE'], tag + '-qswitch.metal'), 'w').write(a)
            open(os.path.join(os.environ['DEC16_SAVE'], tag + '-quant.metal'), 'w').write(b)
    for tag, a, b in variants:
        C.TEXT['qswitch'], C.TEXT['quant'] = a, b
        qswitch_set(tag)
        for bits, sdt in ((4, 'float32'), (4, 'bfloat16'), (8, 'float32'), (2, 'float32')):
            qmv('%s, Encode' % tag, 248320, 1024, bits, sdt)
        for N, K in ((3584, 1024), (1024, 3584)):
            qmv('%s, Encode' % tag, N, K, 4, 'float32')
    C.TEXT.pop('qswitch')
    C.TEXT.pop('quant')


# run16, third call (run16-exp3.log, the tree with the 'or' decoding): a chunk's dot in one
# accumulator ('one'), and also each row's scale and bias applied by two fused
# multiply-adds into acc ('lean'); qswitch_glu's down pass at 16 outputs a threadgroup.
ONE_OLD = '''            d1 = fma(xc[i * (32 / B) + 16 / B + j], as_type<float>(hi & keep) - 8388608.0f, d1);'''
ONE_NEW = '''            d0 = fma(xc[i * (32 / B) + 16 / B + j], as_type<float>(hi & keep) - 8388608.0f, d0);'''
LEAN_OLD = '''        acc[r] += f * fma(sc[r], q_chunk_dot<B>(wd + r * B, xc), bi[r] * xsum);'''
LEAN_NEW = '''        acc[r] = fma(f * sc[r], q_chunk_dot<B>(wd + r * B, xc), fma(f * bi[r], xsum, acc[r]));'''
if 'r16c' in ONLY:
    qs, qm = text('qswitch', M.KDIR), text('quant', M.KDIR)
    assert ONE_OLD in qm and LEAN_OLD in qm and '#define QSW_DR 8' in qs, 'r16c patches the tree before c255fdf'
    one = lambda t: t.replace(ONE_OLD, ONE_NEW)
    lean = lambda t: one(t).replace(LEAN_OLD, LEAN_NEW)
    for rep in (1, 2):
        for tag, fn in (('or', lambda t: t), ('one', one), ('lean', lean)):
            C.TEXT['quant'] = fn(qm)
            for G, ty in ((None, 8), (132, 16)):
                g = qmv_grid(G, ty)
                for bits, sdt in ((4, 'float32'), (4, 'bfloat16'), (8, 'float32')) if G is None else ((4, 'float32'),):
                    qmv('%s, %s' % (tag, g), 248320, 1024, bits, sdt)
            C.QMV_GEOM = None
        C.TEXT.pop('quant')
        for tag, t, dr in (('DR 8', qs, 8), ('DR 16', qs, 16), ('DR 8 lean', lean(qs), 8), ('DR 16 lean', lean(qs), 16)):
            C.TEXT['qswitch'] = t.replace('#define QSW_DR 8', '#define QSW_DR %d' % dr)
            C.QSW_DR = dr
            qswitch_set(tag, parts=(10,) if rep == 1 else ())
        C.TEXT.pop('qswitch')
        C.QSW_DR = 8


# run16, seventh call (run16-exp4.log; the tree c255fdf~: these patches apply to the trees
# before the qmv_pipe entries, which are the 'xb' variant): the staged qmv with the next row block's loads in flight while
# this one's are added (two register buffers, for rows of at most 1,024 codes: one chunk
# a lane, the same chunk in every block); x read once ('x1') or a block ('xb').
PIPE_FN = '''// qmv_pipe_first is row block b's first row (the last block read whole, a dead block
// reading the last one), the rows to skip, and whether the block is live.
inline int qmv_pipe_first(int tg, int bpt, int b, int N, thread int& skip, thread bool& live) {
    int n0 = (tg * bpt + b) * QMV_ROWS;
    live = b < bpt && n0 < N;
    int nf = min(live ? n0 : N, N - QMV_ROWS);
    skip = n0 - nf;
    return nf;
}

// qmv_pipe_block adds a loaded block, reduces it over the simdgroup and writes its rows.
template <int B>
inline void qmv_pipe_block(thread const uint* wd, thread const float* sc, thread const float* bi,
                           threadgroup const float* xs, threadgroup const float* cs, int c, bool on,
                           thread const float* xr, float xsr, int nf, int skip, bool live,
                           device float* outr, threadgroup float* part, uint lane, uint sg) {
    float acc[QMV_ROWS];
    for (int r = 0; r < QMV_ROWS; r++) {
        acc[r] = 0.0f;
    }
#if QMV_PIPE_X1
    q_chunk_add<B, QMV_ROWS>(wd, sc, bi, xr, xsr, 1.0f, acc);
#else
    float xc[32];
    float xsum = q_chunk_x(xs, cs, c, xc);
    if (!on) {
        for (int j = 0; j < 32; j++) {
            xc[j] = 0.0f;
        }
        xsum = 0.0f;
    }
    q_chunk_add<B, QMV_ROWS>(wd, sc, bi, xc, xsum, 1.0f, acc);
#endif
    int row;
    float y = q_rows_reduce(acc, part, live ? QMV_ROWS : 0, lane, lane, sg, sg, 1, row);
    if (row >= 0 && row >= skip) {
        outr[nf + row] = y;
    }
}

// qmv_pipe: slot ry's blocks, two at a time, the second's loads issued before the first
// is added (tx = 32, K <= 1024).
template <typename S, int B>
inline void qmv_pipe(QMat<S> m, int N, int K, device float* outr, threadgroup const float* xs,
                     threadgroup const float* cs, threadgroup float* part, int tg, int bpt, uint ty, uint ry,
                     uint lane, uint sg) {
    int c = min(int(lane), K / 32 - 1);
    bool on = int(lane) < K / 32;
    float xr[32];
    float xsr = 0.0f;
#if QMV_PIPE_X1
    xsr = q_chunk_x(xs, cs, c, xr);
    if (!on) {
        for (int j = 0; j < 32; j++) {
            xr[j] = 0.0f;
        }
        xsr = 0.0f;
    }
#endif
    uint wa[QMV_ROWS * B], wb[QMV_ROWS * B];
    float sa[QMV_ROWS], ba[QMV_ROWS], sb[QMV_ROWS], bb[QMV_ROWS];
    int skipA, skipB;
    bool liveA, liveB;
    int nA = qmv_pipe_first(tg, bpt, int(ry), N, skipA, liveA);
    q_chunk_load<S, B, QMV_ROWS>(m, size_t(nA), QMV_ROWS - 1, c, wa, sa, ba);
    for (int b0 = 0; b0 < bpt; b0 += 2 * int(ty)) {
        int nB = qmv_pipe_first(tg, bpt, b0 + int(ty) + int(ry), N, skipB, liveB);
        q_chunk_load<S, B, QMV_ROWS>(m, size_t(nB), QMV_ROWS - 1, c, wb, sb, bb);
        qmv_pipe_block<B>(wa, sa, ba, xs, cs, c, on, xr, xsr, nA, skipA, liveA, outr, part, lane, sg);
        if (b0 + int(ty) >= bpt) {
            break;
        }
        nA = qmv_pipe_first(tg, bpt, b0 + 2 * int(ty) + int(ry), N, skipA, liveA);
        q_chunk_load<S, B, QMV_ROWS>(m, size_t(nA), QMV_ROWS - 1, c, wa, sa, ba);
        qmv_pipe_block<B>(wb, sb, bb, xs, cs, c, on, xr, xsr, nB, skipB, liveB, outr, part, lane, sg);
    }
}

'''
PIPE_CALL_OLD = '''        // The same trip count for every thread (q_rows_reduce may hold barriers).
        for (int b0 = 0; b0 < bpt; b0 += int(ty)) {'''
PIPE_CALL_NEW = '''        if (staged && tx == 32 && p.K <= 1024) {  // uniform
            qmv_pipe<S, B>(m, p.N, p.K, out + size_t(i) * size_t(p.N), xs, cs, part, int(tg), bpt, ty, ry, lane, sg);
            threadgroup_barrier(mem_flags::mem_threadgroup);
            continue;
        }
        // The same trip count for every thread (q_rows_reduce may hold barriers).
        for (int b0 = 0; b0 < bpt; b0 += int(ty)) {'''


def pipe(t, x1):
    assert PIPE_CALL_OLD in t, 'pipe16 patches a tree without the qmv_pipe entries'
    t = t.replace(PIPE_CALL_OLD, PIPE_CALL_NEW)
    anchor = '// qmv\'s threadgroup is (tx, ty) threads'
    assert anchor in t
    return t.replace(anchor, '#define QMV_PIPE_X1 %d\n' % x1 + PIPE_FN + anchor)


if 'pipe16' in ONLY:
    qm = text('quant', M.KDIR)
    for rep in (1, 2):
        for tag, t in (('main', qm), ('pipe x1', pipe(qm, 1)), ('pipe xb', pipe(qm, 0))):
            C.TEXT['quant'] = t
            for G, ty in ((None, 0), (132, 16), (132, 8), (264, 8), (176, 12)):
                g = qmv_grid(G, ty)
                try:
                    for bits, sdt in ((4, 'float32'), (4, 'bfloat16'), (8, 'float32')) if G is None else ((4, 'float32'),):
                        qmv('%s, %s' % (tag, g), 248320, 1024, bits, sdt)
                except Exception as e:  # noqa: a grid the entry's registers refuse
                    print('%s, %s: %s' % (tag, g, str(e)[:120]), flush=True)
                    C.free_all()
            C.QMV_GEOM = None
            if rep == 1:
                for N, K in ((248320, 2048), (151936, 2048)):
                    qmv('%s, Encode' % tag, N, K, 4, 'float32')
    C.TEXT.pop('quant')


# run16, eighth call: the double-buffered staged qmv on one threadgroup a core of as many
# slots as its registers allow (run16-exp4.log ran it at 132 x 8 and on wave-splitting grids).
if 'pipe16b' in ONLY:
    qm = text('quant', M.KDIR)
    for rep in (1, 2):
        for tag, t, grids in (('main', qm, ((None, 0),)), ('pipe xb', pipe(qm, 0), ((132, 12), (132, 11), (132, 10))),
                              ('pipe x1', pipe(qm, 1), ((132, 11), (132, 10)))):
            C.TEXT['quant'] = t
            for G, ty in grids:
                g = qmv_grid(G, ty)
                try:
                    for bits, sdt in ((4, 'float32'), (4, 'bfloat16')):
                        qmv('%s, %s' % (tag, g), 248320, 1024, bits, sdt)
                except Exception as e:  # noqa: a grid the entry's registers refuse
                    print('%s, %s: %s' % (tag, g, str(e)[:120]), flush=True)
                    C.free_all()
            C.QMV_GEOM = None
    C.TEXT.pop('quant')
