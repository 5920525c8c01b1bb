package kernels

import (
	"encoding/binary"
	"fmt"
)

// The quant family: affine-quantized matrices (MLX's format, see quantize.go) used in
// place, never expanded to a float copy. A quantized matrix is three arguments: the
// packed rows (uint32 [rows, cols*Bits/32]), scales and biases ([rows, cols/Group], all
// float32, all float16 or all bfloat16). Activations and outputs are float32.
//
// Every dot product of an x row with a packed row, in the Go twins and the MSL qmm, is
// computed per group as scale*(x.q) + bias*sum(x), each part rounded to float32, in
// one fixed order: at 4 and 8 bits the 16-lane order of quant16.go (built for
// AVX-512), at 2, 3, 5 and 6 bits groups accumulated in order with x.q and sum(x) in
// the matmul family's four-lane order within the group. So a row gives the same
// result in qmv, qmm, the tied head and the experts, alone or among many rows, on the
// CPU. The MSL qmv and qswitch_glu spread a row over a threadgroup (quant.metal,
// qswitch.metal) and add the same terms in another order, and the MSL qmm from
// qmmGemmMinRows rows dequantizes tiles of w (gemm.metal) and adds x * (s*q + b), all
// within the catalog's tolerance.

// QuantParams is the parameter struct of KQMV and KQMM: x [M, K] times the transpose of
// the quantized [N, K] matrix gives out [M, N].
type QuantParams struct {
	M, N, K int
	Bits    int `msl:"bits"`
	Group   int `msl:"group"`
	// Int8 asks for the int8 prompt path (qmm8.go) where the CPU has it: x rows
	// quantized to bytes per group, exact integer group sums. The Metal twin ignores it.
	Int8 bool `msl:"int8"`
}

// KQMV is the decode-time quantized product out = x @ dequant(w)^T for few rows (the
// Go twin passes over the packed matrix once per x row). Args x, w, scales, biases, out.
var KQMV = Register(&Kernel{Name: "qmv", Family: "quant", CPU: qmvCPU, Encode: qmvEncode})

// KQMM is KQMV for many rows (prefill): the Go twin keeps a tile of packed rows hot in
// cache while every x row passes over it. Same args and results as KQMV.
var KQMM = Register(&Kernel{Name: "qmm", Family: "quant", CPU: qmmCPU, Encode: qmmEncode})

// QEmbedParams is the parameter struct of KQEmbed: T ids into a quantized [V, D] table.
type QEmbedParams struct {
	T, V, D int
	Bits    int `msl:"bits"`
	Group   int `msl:"group"`
}

// KQEmbed looks up dequantized rows: out[t, :] = scales*q + biases of row ids[t]. Args
// ids (int32 [T]), w, scales, biases, out (float32 [T, D]). Negative ids wrap; an id
// outside [-V, V) fails the launch, as take does (a token outside the vocabulary is
// an error, never a zero embedding; the MSL twin reports it in the error word).
var KQEmbed = Register(&Kernel{Name: "qembed", Family: "quant", CPU: qembedCPU, Encode: qembedEncode,
	IndexAxis: func(l *Launch) int { return l.Params.(*QEmbedParams).V }})

// QSwitchGLUParams is the parameter struct of KQSwitchGLU: as SwitchGLUParams, plus the
// bits and group size of each projection (per-module overrides may differ).
type QSwitchGLUParams struct {
	T, H, K, E, I int
	GateBits      int `msl:"gate_bits"`
	UpBits        int `msl:"up_bits"`
	DownBits      int `msl:"down_bits"`
	GateGroup     int `msl:"gate_group"`
	UpGroup       int `msl:"up_group"`
	DownGroup     int `msl:"down_group"`
}

// KQSwitchGLU is KSwitchGLU with quantized experts: gate and up [E, I, H], down
// [E, H, I], each as (w, scales, biases). Args x [T, H], gate w/s/b, up w/s/b, down
// w/s/b, idx int32 [T, k], scores [T, k], out [T, H] (13 arguments).
var KQSwitchGLU = Register(&Kernel{Name: "qswitch_glu", Family: "qswitch", CPU: qswitchCPU, Encode: qswitchEncode})

// qMatrix is a bound quantized matrix: its packed rows and its scale/bias arguments.
type qMatrix struct {
	raw               []byte
	sc, bi            *Arg
	rowBytes, groups  int
	bits, group, cols int
	scale32, bias32   []float32 // set when the scales are float32 (the fast path)
}

// qBind checks a (w, scales, biases) triple for a [rows, cols] matrix and binds it.
// A mismatch is a bug in the op that built the launch (the layers validate shapes).
func qBind(op string, w, s, b *Arg, rows, cols, bits, group int) qMatrix {
	words, groups, err := CheckQuant(cols, bits, group)
	if err != nil {
		panic(fmt.Sprintf("kernels: %s: %v", op, err))
	}
	mmCheckDense(op, w, s, b)
	if w.DType != UInt32 || !s.DType.IsFloat() || s.DType != b.DType ||
		w.Size() < rows*words || s.Size() < rows*groups || b.Size() < rows*groups {
		panic(fmt.Sprintf("kernels: %s: weight %s %v, scales %s %v, biases %s %v for [%d, %d] at %d bits, group %d",
			op, w.DType, w.Dims(), s.DType, s.Dims(), b.DType, b.Dims(), rows, cols, bits, group))
	}
	m := qMatrix{raw: w.Data[w.Offset*4 : (w.Offset+rows*words)*4], sc: s, bi: b,
		rowBytes: words * 4, groups: groups, bits: bits, group: group, cols: cols}
	if s.DType == Float32 {
		m.scale32 = F32(s.Data)[s.Offset : s.Offset+rows*groups]
		m.bias32 = F32(b.Data)[b.Offset : b.Offset+rows*groups]
	}
	return m
}

// scaleBias returns the scale and bias of group g of row r, widened to float32.
func (m *qMatrix) scaleBias(r, g int) (float32, float32) {
	i := r*m.groups + g
	if m.scale32 != nil {
		return m.scale32[i], m.bias32[i]
	}
	return float32(Load(m.sc.DType, m.sc.Data, m.sc.Offset+i)), float32(Load(m.bi.DType, m.bi.Data, m.bi.Offset+i))
}

// groupSums writes the four-lane sum of each group of x into sums.
func (m *qMatrix) groupSums(x, sums []float32) {
	for g := range sums[:m.groups] {
		sums[g] = qSum(x[g*m.group : (g+1)*m.group])
	}
}

// qSum adds v in the matmul family's lane order (len(v) is a multiple of 8).
func qSum(v []float32) float32 {
	var s0, s1, s2, s3 float32
	for k := 0; k+4 <= len(v); k += 4 {
		s0 += v[k]
		s1 += v[k+1]
		s2 += v[k+2]
		s3 += v[k+3]
	}
	return (s0 + s1) + (s2 + s3)
}

// dot is row r of the matrix dotted with x (len cols) whose group sums are sums. It is
// the definition of every quantized dot product and the portable fallback: dotRows
// (quant_simd.go) computes the same values bit for bit in assembly, eight rows at a time.
func (m *qMatrix) dot(x, sums []float32, r int) float32 {
	if qLanes16(m.bits) {
		return m.dot16(x, sums, r)
	}
	p := m.raw[r*m.rowBytes : (r+1)*m.rowBytes]
	gb := m.group * m.bits / 8
	acc := float32(0)
	for g := 0; g < m.groups; g++ {
		d := qGroupDot(x[g*m.group:(g+1)*m.group], p[g*gb:(g+1)*gb], m.bits)
		s, b := m.scaleBias(r, g)
		// The explicit conversions keep the compiler from fusing into an FMA.
		acc += float32(s*d) + float32(b*sums[g])
	}
	return acc
}

// qGroupDot is x . q for one group, decoding the codes from p on the fly, in the
// matmul family's order: lane j = k mod 4 adds x[k]*q[k] for k = j, j+4, j+8, ... in
// turn (the product rounded to float32, then the sum: no FMA), and the result is
// (l0 + l1) + (l2 + l3). The assembly keeps exactly this order.
func qGroupDot(x []float32, p []byte, bits int) float32 {
	var s0, s1, s2, s3 float32
	switch bits {
	case 4:
		n := len(x) / 8
		p, x = p[:4*n], x[:8*n]
		for i := 0; i < n; i++ {
			w := binary.LittleEndian.Uint32(p[4*i:])
			xs := x[8*i : 8*i+8 : 8*i+8]
			s0 += xs[0] * float32(int32(w&15))
			s1 += xs[1] * float32(int32(w>>4&15))
			s2 += xs[2] * float32(int32(w>>8&15))
			s3 += xs[3] * float32(int32(w>>12&15))
			s0 += xs[4] * float32(int32(w>>16&15))
			s1 += xs[5] * float32(int32(w>>20&15))
			s2 += xs[6] * float32(int32(w>>24&15))
			s3 += xs[7] * float32(int32(w>>28))
		}
	case 8:
		p = p[:len(x)]
		for k := 0; k+4 <= len(x); k += 4 {
			xs, ps := x[k:k+4:k+4], p[k:k+4:k+4]
			s0 += xs[0] * float32(int32(ps[0]))
			s1 += xs[1] * float32(int32(ps[1]))
			s2 += xs[2] * float32(int32(ps[2]))
			s3 += xs[3] * float32(int32(ps[3]))
		}
	default: // 8 codes fill exactly bits bytes: load them as one little-endian integer
		b := uint(bits)
		mask := uint64(1)<<b - 1
		for k := 0; k+8 <= len(x); k += 8 {
			off := k / 8 * bits
			var v uint64
			if off+8 <= len(p) {
				v = binary.LittleEndian.Uint64(p[off:]) // bytes past the chunk shift out
			} else {
				for i := bits - 1; i >= 0; i-- {
					v = v<<8 | uint64(p[off+i])
				}
			}
			xs := x[k : k+8 : k+8]
			s0 += xs[0] * float32(int32(v&mask))
			s1 += xs[1] * float32(int32(v>>b&mask))
			s2 += xs[2] * float32(int32(v>>(2*b)&mask))
			s3 += xs[3] * float32(int32(v>>(3*b)&mask))
			s0 += xs[4] * float32(int32(v>>(4*b)&mask))
			s1 += xs[5] * float32(int32(v>>(5*b)&mask))
			s2 += xs[6] * float32(int32(v>>(6*b)&mask))
			s3 += xs[7] * float32(int32(v>>(7*b)&mask))
		}
	}
	return (s0 + s1) + (s2 + s3)
}

func qmvCPU(l *Launch) { qLinearCPU(l, "qmv", false) }
func qmmCPU(l *Launch) { qLinearCPU(l, "qmm", true) }

// qmmTileBytes bounds the packed rows one qmm tile keeps hot (32 KiB).
const qmmTileBytes = 32 << 10

func qLinearCPU(l *Launch, op string, tiled bool) {
	p := l.Params.(*QuantParams)
	x, o := &l.Args[0], &l.Args[4]
	mustFloat32(op, x, o)
	mmCheckDense(op, x)
	if p.M*p.N == 0 {
		return
	}
	m := qBind(op, &l.Args[1], &l.Args[2], &l.Args[3], p.N, p.K, p.Bits, p.Group)
	xs := F32(x.Data)[x.Offset : x.Offset+p.M*p.K]
	os := F32(o.Data)[o.Offset : o.Offset+p.M*p.N]
	sp := getScratchDirty(p.M * m.groups) // pooled: every sum is written below
	defer putScratch(sp)
	sums := *sp
	if p.M*p.K < splitElems {
		for i := 0; i < p.M; i++ {
			m.groupSums(xs[i*p.K:(i+1)*p.K], sums[i*m.groups:])
		}
	} else { // a prefill's rows: the closure is made only here, not for a decode step
		l.Helper.splitRows(p.M, p.K, func(r0, r1 int) {
			for i := r0; i < r1; i++ {
				m.groupSums(xs[i*p.K:(i+1)*p.K], sums[i*m.groups:])
			}
		})
	}
	if p.Int8 && m.useQmm8() {
		m.rowsMM8(xs, sums, p.M, p.N, os, l.Helper)
		return
	}
	var qs qSIMD
	q := qs.init(&m)
	if q != nil && q.lanes && m.useQmm16(p.M, p.N) {
		m.rowsMM16(xs, sums, p.M, p.N, os, l.Helper)
		return
	}
	if q != nil && q.lanes {
		m.rowsAll16(xs, sums, p.M, p.N, os, tiled, l.Helper)
		return
	}
	if tiled && q != nil && p.N >= qRowBlock {
		m.qmmRows(xs, sums, p.M, p.N, os, q)
		return
	}
	tile := p.N
	if tiled {
		tile = max(1, qmmTileBytes/m.rowBytes)
	}
	for n0 := 0; n0 < p.N; n0 += tile {
		n1 := min(p.N, n0+tile)
		for i := 0; i < p.M; i++ {
			xr, sr := xs[i*p.K:(i+1)*p.K], sums[i*m.groups:(i+1)*m.groups]
			m.dotRows(xr, sr, n0, os[i*p.N+n0:i*p.N+n1], q)
		}
	}
}

func qembedCPU(l *Launch) {
	p := l.Params.(*QEmbedParams)
	ix, o := &l.Args[0], &l.Args[4]
	mustFloat32("qembed", o)
	mmCheckDense("qembed", ix)
	if p.T*p.D == 0 {
		return
	}
	m := qBind("qembed", &l.Args[1], &l.Args[2], &l.Args[3], p.V, p.D, p.Bits, p.Group)
	ids := I32(ix.Data)[ix.Offset : ix.Offset+p.T]
	os := F32(o.Data)[o.Offset : o.Offset+p.T*p.D]
	gb := m.group * m.bits / 8
	for t, id := range ids {
		row := os[t*p.D : (t+1)*p.D]
		r := takeIndex(l, id, p.V)
		packed := m.raw[r*m.rowBytes:]
		for g := 0; g < m.groups; g++ {
			vals := row[g*m.group : (g+1)*m.group]
			quantUnpack(vals, packed[g*gb:(g+1)*gb], m.bits)
			s, b := m.scaleBias(r, g)
			for i, q := range vals {
				vals[i] = float32(s*q) + b
			}
		}
	}
}

func qswitchCPU(l *Launch) {
	p := l.Params.(*QSwitchGLUParams)
	x, ix, sc, o := &l.Args[0], &l.Args[10], &l.Args[11], &l.Args[12]
	mustFloat32("qswitch_glu", x, sc, o)
	mmCheckDense("qswitch_glu", x, ix, sc)
	H, I, K := p.H, p.I, p.K
	if p.T*H == 0 {
		return
	}
	gate := qBind("qswitch_glu gate", &l.Args[1], &l.Args[2], &l.Args[3], p.E*I, H, p.GateBits, p.GateGroup)
	up := qBind("qswitch_glu up", &l.Args[4], &l.Args[5], &l.Args[6], p.E*I, H, p.UpBits, p.UpGroup)
	down := qBind("qswitch_glu down", &l.Args[7], &l.Args[8], &l.Args[9], p.E*H, I, p.DownBits, p.DownGroup)
	xs := F32(x.Data)[x.Offset : x.Offset+p.T*H]
	idx := I32(ix.Data)[ix.Offset : ix.Offset+p.T*K]
	ss := F32(sc.Data)[sc.Offset : sc.Offset+p.T*K]
	ys := F32(o.Data)[o.Offset : o.Offset+p.T*H]
	gsums, usums := make([]float32, gate.groups), make([]float32, up.groups)
	// Each expert's scaled output goes to its own row of outs, so the experts may run
	// on either core (a Helper takes them when the experts are large) while the sum
	// over them keeps the order j = 0, 1, ... of the one-core loop.
	outs := make([]float32, K*H)
	var ex [2]qswitchScratch
	for s := range ex {
		ex[s].init(&gate, &up, &down, I, H)
	}
	h := l.Helper
	if (gate.rowBytes+up.rowBytes)*I+down.rowBytes*H < qswitchHelpBytes {
		h = nil
	}
	for t := 0; t < p.T; t++ {
		xr, yr := xs[t*H:(t+1)*H], ys[t*H:(t+1)*H]
		gate.groupSums(xr, gsums)
		up.groupSums(xr, usums)
		h.parallelRows(K, 1, func(j0, j1, s int) {
			for j := j0; j < j1; j++ {
				if e, ok := gatherIndex(idx[t*K+j], p.E); ok {
					ex[s].expert(&gate, &up, &down, xr, gsums, usums, e, ss[t*K+j], outs[j*H:(j+1)*H])
				}
			}
		})
		clear(yr)
		for j := 0; j < K; j++ {
			if _, ok := gatherIndex(idx[t*K+j], p.E); !ok {
				continue
			}
			for i, v := range outs[j*H : (j+1)*H] {
				yr[i] += v
			}
		}
	}
}

// qswitchHelpBytes is the bytes of one expert (gate, up and down) from which a
// qswitch_glu shares its experts with the Helper: a real MoE's (1.5 MB at hidden 2048,
// width 512, 4 bits), not the repro's.
const qswitchHelpBytes = 256 << 10

// qswitchScratch is one goroutine's buffers for qswitch_glu's experts.
type qswitchScratch struct {
	asums, act, gd, ud, dd []float32
	gs, us, ds             qSIMD
	gq, uq, dq             *qSIMD
}

func (c *qswitchScratch) init(gate, up, down *qMatrix, I, H int) {
	c.asums = make([]float32, down.groups)
	c.act, c.gd, c.ud, c.dd = make([]float32, I), make([]float32, I), make([]float32, I), make([]float32, H)
	c.gq, c.uq, c.dq = c.gs.init(gate), c.us.init(up), c.ds.init(down)
}

// expert writes expert e's SwiGLU of x, times its score s, to out.
func (c *qswitchScratch) expert(gate, up, down *qMatrix, xr, gsums, usums []float32, e int, s float32, out []float32) {
	I, H := len(c.act), len(out)
	gate.dotRows(xr, gsums, e*I, c.gd, c.gq)
	up.dotRows(xr, usums, e*I, c.ud, c.uq)
	copy(c.act, c.ud)
	gateSilu(c.act, c.gd) // silu in float64, rounded, times up: as switch_glu
	down.groupSums(c.act, c.asums)
	down.dotRows(c.act, c.asums, e*H, c.dd, c.dq)
	for h := range out {
		out[h] = c.dd[h] * s
	}
}

// qEntry is the MSL entry of a quant kernel for scales of dtype dt.
func qEntry(base string, dt DType) string { return base + "_" + dt.String() }

func qBindAll(l *Launch, e Encoder, n int) {
	for i := 0; i < n; i++ {
		e.SetArg(i, &l.Args[i])
	}
}

// qmvRows and qmvMaxSimdgroups are quant_rows.metal's QMV_ROWS and QMV_MAXSG.
const (
	qmvRows          = 8
	qmvMaxSimdgroups = 8
)

// qmvThreads is the threadgroup width of the qmv-style kernels for rows of units
// units of 8 codes, perLane units to a lane: up to qmvMaxSimdgroups simdgroups.
func qmvThreads(units, perLane int) [3]int {
	return [3]int{32 * min(qmvMaxSimdgroups, max(1, (units+32*perLane-1)/(32*perLane))), 1, 1}
}

// qmvManyGroups is the row-block count from which qmv takes the staged entry (see
// qmvStaged) or, for the other widths and longer rows, gives each threadgroup one
// simdgroup and each lane four units: with the GPU full, less reduction per byte is
// faster (1024 -> 248320 at 4 bits: 109 us against 121 us at two units a lane and 148
// at one, on the H200 translation); with few threadgroups, a unit a lane takes each
// row in one pass (3584 -> 1024: 9.1 us against 18.5 at two units a lane).
const qmvManyGroups = 4096

// qmvPerLane is the units per lane of a qmv launch of groups threadgroups.
func qmvPerLane(groups int) int {
	if groups >= qmvManyGroups {
		return 4
	}
	return 1
}

// The staged qmv (quant.metal's qmv_staged entries): with many row blocks, 2-, 4- and
// 8-bit rows of at most qmvXMax codes take threadgroups of simdgroup slots sharing their
// row blocks, x staged once in threadgroup memory for all of them (1024 -> 248320 at 4
// bits: 66 us against 108 for the unit path, on the H200 translation,
// docs/h200/run10-exp5.log; with few row blocks staging does not pay: 3584 -> 1024 took
// 15.6 us against 7.3). 4-bit rows of at most qmvPipeMaxK codes take the qmv_pipe
// entries, which keep a slot's next row block's loads in flight while it adds this one's
// (more registers a thread). Either way one threadgroup a core, qmvStagedGroups of them,
// each as many slots as the pipeline takes threads, at most qmvStagedSlots, each slot at
// least qmvStagedBlocks row blocks; a threadgroup loops over its even share. On the H200
// translation (132 cores): the staged loop at 128 registers, 16 slots, 1024 -> 248320 at
// 4 bits 55.0 us (55.7 for 264 threadgroups of 8, docs/h200/run16-exp4.log; 59.8 against
// 66.4 for 970 of 4 in run13-exp2.log); the pipelined one at 168 registers, 12 slots,
// 50.3 us (56.7 at 8 slots, 73.4 for 176 threadgroups of 12: two waves;
// run16-exp4.log, run16-exp5.log). An Apple GPU's counts are still to be measured on a
// Mac.
const (
	qmvXMax          = 4096 // QMV_XMAX
	qmvPipeMaxK      = 1024 // QMV_PIPE_K
	qmvStagedSlots   = 16
	qmvStagedGroups  = 132
	qmvStagedBlocks  = 4
	qmvStagedMinRows = qmvManyGroups * qmvRows
)

// qmvStagedGrid is the staged qmv's threadgroups and threadgroup size for blocks row
// blocks: as many slots a threadgroup as the selected pipeline takes threads.
func qmvStagedGrid(blocks int, e Encoder) (groups int, tpg [3]int) {
	slots := ClampGroup(32*qmvStagedSlots, e)[0] / 32
	per := qmvStagedBlocks * slots // least blocks a threadgroup
	return max(min((blocks+per-1)/per, qmvStagedGroups), 1), [3]int{32, slots, 1}
}

// qmvStaged is whether a qmv launch takes the staged entry.
func qmvStaged(l *Launch) bool {
	p := l.Params.(*QuantParams)
	return qChunkBits(p.Bits) && p.K <= qmvXMax && p.N >= qmvStagedMinRows && qAligned(&l.Args[1])
}

// qAligned is whether packed rows are bound 16 bytes from an aligned start: the chunk
// entries (the staged qmv, qswitch_glu's _chunks) load a chunk's words as
// uint4s (quant_rows.metal's q_words), which Metal wants at 16-byte offsets.
func qAligned(w *Arg) bool { return w.Offset%4 == 0 }

func qmvEncode(l *Launch, e Encoder) {
	p := l.Params.(*QuantParams)
	staged := qmvStaged(l)
	if staged && p.Bits == 4 && p.K <= qmvPipeMaxK {
		e.Entry(qEntry("qmv_pipe", l.Args[2].DType))
	} else if staged {
		e.Entry(qEntry("qmv_staged", l.Args[2].DType))
	} else {
		e.Entry(qEntry("qmv", l.Args[2].DType))
	}
	qBindAll(l, e, 5)
	e.SetBytes(5, mslPack(p))
	// Row blocks of qmvRows output columns, split evenly among the threadgroups (see
	// quant.metal): ceil(N / 8) blocks fill the GPU at decode sizes.
	blocks := max((p.N+qmvRows-1)/qmvRows, 1)
	if staged {
		groups, tpg := qmvStagedGrid(blocks, e)
		e.DispatchThreadgroups([3]int{groups, 1, 1}, tpg)
		return
	}
	// A slot's simdgroups split its rows' units at any count, so the pipeline's limit
	// may lower it.
	e.DispatchThreadgroups([3]int{blocks, 1, 1}, ClampGroup(qmvThreads(p.K/8, qmvPerLane(blocks))[0], e))
}

func qmmEncode(l *Launch, e Encoder) {
	p := l.Params.(*QuantParams)
	// qmmGemmMinRows rows or more take the tiled entries (gemm.metal, each code
	// dequantized once a tile of 64 or 128 x rows); fewer the one-thread-an-output entry,
	// the Go twin's order.
	t := gemmTile(p.M, p.N, 1)
	if p.M >= qmmGemmMinRows && gemmEntry(e, qEntry(fmt.Sprintf("qmm_gemm%d", t), l.Args[2].DType)) {
		qBindAll(l, e, 5)
		e.SetBytes(5, mslPack(p))
		gemmDispatch(e, t, p.M, p.N, 1)
		return
	}
	e.Entry(qEntry("qmm", l.Args[2].DType))
	qBindAll(l, e, 5)
	e.SetBytes(5, mslPack(p))
	// One thread per output element: x = column, y = x row.
	e.DispatchThreads([3]int{max(p.N, 1), max(p.M, 1), 1}, [3]int{LimitThreads(min(max(p.N, 1), 64), e), 1, 1})
}

func qembedEncode(l *Launch, e Encoder) {
	p := l.Params.(*QEmbedParams)
	e.Entry(qEntry("qembed", l.Args[2].DType))
	qBindAll(l, e, 5)
	e.SetBytes(5, mslPack(p))
	e.ErrorWord(6)
	// One thread per output element: x = feature, y = token.
	e.DispatchThreads([3]int{max(p.D, 1), max(p.T, 1), 1}, [3]int{LimitThreads(min(max(p.D, 1), 64), e), 1, 1})
}

func qswitchEncode(l *Launch, e Encoder) {
	p := l.Params.(*QSwitchGLUParams)
	prm := mslPack(p)
	dt := l.Args[2].DType
	chunks := p.GateBits == p.UpBits && qChunkBits(p.GateBits) && p.H <= qmvXMax &&
		qAligned(&l.Args[1]) && qAligned(&l.Args[4])
	act := 4 * max(1, p.T*p.K*p.I) // the activations [T, k, I]
	// Pass 1: every routed expert's activations: by chunks where gate and up share a
	// width of 2, 4 or 8 bits and x fits the staging (qswitchSGs simdgroups of
	// qswitchSGRows rows a threadgroup), else by units, qmvRows rows a threadgroup.
	tpg := qmvThreads(p.H/8, 2)
	rows := qmvRows // act rows a threadgroup
	if chunks {
		e.Entry(qEntry("qswitch_act_chunks", dt))
		// The MSL takes its simdgroup count from the threadgroup: fewer where the
		// pipeline allows fewer threads, and fewer act rows a threadgroup then.
		tpg = ClampGroup(32*qswitchSGs, e)
		rows = tpg[0] / 32 * qswitchSGRows
	} else {
		e.Entry(qEntry("qswitch_act", dt))
		tpg = ClampGroup(tpg[0], e) // its simdgroups split the units at any count
	}
	for _, i := range []int{0, 1, 2, 3, 4, 5, 6, 10} {
		e.SetArg(i, &l.Args[i])
	}
	e.SetBytes(13, prm)
	e.Scratch(14, act)
	e.DispatchThreadgroups([3]int{max((p.I+rows-1)/rows, 1), max(p.T*p.K, 1), 1}, tpg)
	// Pass 2: the outputs, qmvRows per threadgroup, each down row read once a token;
	// an (expert, chunk) pair a thread, qswitchDownRows outputs a threadgroup, for down
	// rows of 2, 4 or 8 bits.
	tpg = qmvThreads(p.K*p.I/8, 2)
	rows = qmvRows
	if qChunkBits(p.DownBits) && qAligned(&l.Args[7]) {
		e.Entry(qEntry("qswitch_down_chunks", dt))
		tpg, rows = qmvThreads(p.K*p.I/32, 1), qswitchDownRows
	} else {
		e.Entry(qEntry("qswitch_down", dt))
	}
	tpg = ClampGroup(tpg[0], e) // both split their work among the threadgroup's threads at any count
	for _, i := range []int{7, 8, 9, 10, 11, 12} {
		e.SetArg(i, &l.Args[i])
	}
	e.SetBytes(13, prm)
	e.Scratch(14, act)
	e.DispatchThreadgroups([3]int{max((p.H+rows-1)/rows, 1), max(p.T, 1), 1}, tpg)
}

// qswitch_act_chunks's threadgroup: qswitchSGs simdgroups of qswitchSGRows rows each
// (qswitch.metal's QSW_RS), x staged once in threadgroup memory for them (see qswitch.metal).
// Qwen3-Next top-10 on the H200 translation (docs/h200/run13-exp2.log): the act launch
// alone 13.4 us against 17.2 for one simdgroup of 8 rows at 255 registers; 14.2 at 4
// simdgroups of 4 rows, 20.1 at 8 of 2, 16.3 at 2 of 4, 25.4 at 1 of 8.
const (
	qswitchSGs    = 4
	qswitchSGRows = 2
)

// qswitchDownRows is qswitch_down_chunks's outputs a threadgroup (qswitch.metal's QSW_DR,
// where the choice is measured).
const qswitchDownRows = 8

// qChunkBits is whether rows of bits-bit codes can be taken by 32-code chunks (the
// staged qmv's and qswitch_glu's _chunks entries): 32 codes are bits whole words, 16 /
// bits codes a half word.
func qChunkBits(bits int) bool { return bits == 2 || bits == 4 || bits == 8 }
