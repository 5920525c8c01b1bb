package kernels

import (
	"fmt"
	"unsafe"
)

// The assembly path of the quantized dot products. qMatrix.dot stays the definition
// (and the portable fallback). At 4 and 8 bits dotRows calls the 16-lane AVX-512
// kernels (quant16.go, quant16b[48]_amd64.s: every row of the call in one pass); at the
// other widths it computes eight rows at a time in AVX2 assembly, bit for bit
// qGroupDot's values:
//
//   - Within a group, lane j (j = k mod 4) adds x[k]*q[k] for k = j, j+4, j+8, ... in
//     order, each product rounded to float32 and then added (VMULPS then VADDPS, never
//     an FMA). A ymm accumulator holds two rows side by side, four lanes each.
//   - The group dot is (s0+s1)+(s2+s3) (two rounds of VHADDPS, whose pairs are exactly
//     those sums).
//   - The row accumulates acc += float32(scale*dot) + float32(bias*sum(x)) group by
//     group in order, eight rows in one ymm.
//
// qmm (qmmRows) first decodes a block of eight rows to float32 codes and then runs
// the same arithmetic for each x row, so the codes are unpacked once per block.
// quant_simd_test.go checks every path against qMatrix.dot bit for bit, for every
// bit width, group size and scale dtype.

// qRowBlock is the number of rows one assembly call computes.
const qRowBlock = 8

// qTab is the constant table of one assembly call: the right shifts that bring the four
// codes of each 4-code chunk of a 16-code super-block to bit 0 of their lanes, the code
// mask, and the gather indices of the eight rows' scales in the accumulator's row order.
type qTab struct {
	shifts [4][8]uint32
	mask   [8]uint32
	idx    [8]int32
}

// qSIMD is the per-matrix state of the assembly path. The kernels (qAsmDot8) compute
// eight rows of packed codes (ldp bytes apart) dotted with x over groups groups of
// supers*16 codes, combined with the group sums of x and the rows' scales and biases
// (each [8, groups] float32), into out[0:8].
type qSIMD struct {
	bits   int
	lanes  bool      // the 16-lane kernels (4 and 8 bits, quant16.go)
	xp     []float32 // x permuted for them
	dt     DType     // the scales' dtype
	tab    qTab
	sc, bi []float32 // one block's scales and biases widened from a half type
	tail   [qRowBlock]float32
	dec    []float32 // one block decoded for qmm: 8*cols floats
}

// qChunkOffset is the byte offset, within a 16-code super-block of bits-bit codes, of
// the little-endian uint32 from which chunk k (codes 4k..4k+3) is shifted out. The
// chunk starts at bit 4*bits*k; the offset is the byte holding that bit (up to 4
// bits, the byte holding the chunk pair's first bit, so two chunks share one load),
// pulled back so the load stays inside the super-block (2*bits bytes), which keeps
// every load inside the row. The assembly hard-codes these offsets per bit width.
func qChunkOffset(bits, k int) int {
	if bits <= 4 {
		return min(k/2*bits, 2*bits-4)
	}
	return min(bits*k/2, 2*bits-4)
}

// init sets q up for m and returns it, or nil when the portable loops must run (no
// AVX2, or a layout the kernels do not cover). q may live on the caller's stack.
func (q *qSIMD) init(m *qMatrix) *qSIMD {
	if qLanes16(m.bits) {
		if !qAsm16() || m.group%32 != 0 || m.groups == 0 {
			return nil
		}
		q.bits, q.lanes, q.dt = m.bits, true, m.sc.DType
		return q
	}
	if !useAVX2 || m.group%16 != 0 || m.groups == 0 || !qAsmHas(m.bits) {
		return nil
	}
	q.bits = m.bits
	for k := range 4 {
		base := 4*m.bits*k - 8*qChunkOffset(m.bits, k)
		for l := range 8 {
			q.tab.shifts[k][l] = uint32(base + l%4*m.bits)
		}
	}
	for l, r := range [8]int{0, 2, 4, 6, 1, 3, 5, 7} {
		q.tab.mask[l] = 1<<m.bits - 1
		q.tab.idx[l] = int32(r * m.groups)
	}
	if m.scale32 == nil {
		n := qRowBlock * m.groups
		buf := make([]float32, 2*n)
		q.sc, q.bi = buf[:n:n], buf[n:]
	}
	return q
}

// dotRows writes out[i] = m.dot(x, sums, r0+i) for i < len(out), eight rows per
// assembly call when q is not nil, else in Go. A last partial block is computed as
// the eight rows ending at the last one (each row's value does not depend on its
// block), in Go only when the matrix has fewer than eight rows up to there.
func (m *qMatrix) dotRows(x, sums []float32, r0 int, out []float32, q *qSIMD) {
	if q != nil && q.lanes {
		m.rows16(x, sums, r0, out, q)
		return
	}
	i := 0
	if q != nil {
		x, sums = x[:m.cols], sums[:m.groups] // the extent the assembly reads
		for ; i+qRowBlock <= len(out); i += qRowBlock {
			m.dotBlock(x, sums, r0+i, out[i:i+qRowBlock], q)
		}
		if rest := len(out) - i; rest > 0 && r0+len(out) >= qRowBlock {
			m.dotBlock(x, sums, r0+len(out)-qRowBlock, q.tail[:], q)
			copy(out[i:], q.tail[qRowBlock-rest:])
			return
		}
	}
	for ; i < len(out); i++ {
		out[i] = m.dot(x, sums, r0+i)
	}
}

// dotBlock writes the dots of rows r..r+7 to out[:8] with one assembly call.
func (m *qMatrix) dotBlock(x, sums []float32, r int, out []float32, q *qSIMD) {
	p := m.raw[r*m.rowBytes : (r+qRowBlock)*m.rowBytes]
	sc, bi := m.blockScales(r, q)
	out = out[:qRowBlock]
	qAsmDot8(q.bits, &x[0], &p[0], uintptr(m.rowBytes), m.groups, m.group/16, &sums[0], &sc[0], &bi[0], &q.tab, &out[0])
}

// blockScales returns the scales and biases of rows r..r+7 as [8, groups] float32:
// the matrix's own when they are float32, else widened into q's buffers (exactly, as
// scaleBias widens them).
func (m *qMatrix) blockScales(r int, q *qSIMD) ([]float32, []float32) {
	n := qRowBlock * m.groups
	i0 := r * m.groups
	if m.scale32 != nil {
		return m.scale32[i0 : i0+n], m.bias32[i0 : i0+n]
	}
	ss := U16(m.sc.Data)[m.sc.Offset+i0 : m.sc.Offset+i0+n]
	bs := U16(m.bi.Data)[m.bi.Offset+i0 : m.bi.Offset+i0+n]
	sc, bi := q.sc[:n], q.bi[:n]
	if m.sc.DType == BFloat16 {
		for i := range sc {
			sc[i], bi[i] = BF16ToF32(ss[i]), BF16ToF32(bs[i])
		}
	} else if useF16C { // n is a multiple of 8
		f16ToF32F16C(&sc[0], &ss[0], n/8)
		f16ToF32F16C(&bi[0], &bs[0], n/8)
	} else {
		for i := range sc {
			sc[i], bi[i] = F16ToF32(ss[i]), F16ToF32(bs[i])
		}
	}
	return sc, bi
}

// qmmRows writes os[i*n+r] = m.dot(x row i, its sums, r) for the m x rows of xs
// (each cols long, sums groups long) and every row r < n of the matrix (n >= 8),
// decoding each block of eight rows once for all x rows (the prefill case). The last
// block ends at row n-1, overlapping the one before it.
func (m *qMatrix) qmmRows(xs, sums []float32, mRows, n int, os []float32, q *qSIMD) {
	k, g := m.cols, m.groups
	if cap(q.dec) < qRowBlock*k {
		q.dec = make([]float32, qRowBlock*k)
	}
	dec := q.dec[:qRowBlock*k]
	xs, sums, os = xs[:mRows*k], sums[:mRows*g], os[:mRows*n]
	for r0 := 0; r0 < n; r0 += qRowBlock {
		r := min(r0, n-qRowBlock)
		p := m.raw[r*m.rowBytes : (r+qRowBlock)*m.rowBytes]
		qAsmDecode8(q.bits, &p[0], uintptr(m.rowBytes), k/16, &q.tab, &dec[0])
		sc, bi := m.blockScales(r, q)
		i := 0
		for ; i+1 < mRows; i += 2 {
			o0, o1 := os[i*n+r:i*n+r+qRowBlock], os[(i+1)*n+r:(i+1)*n+r+qRowBlock]
			qdot8f2(&xs[i*k], &xs[(i+1)*k], &dec[0], g, m.group/16, &sums[i*g], &sums[(i+1)*g], &sc[0], &bi[0], &q.tab, &o0[0], &o1[0])
		}
		if i < mRows {
			o := os[i*n+r : i*n+r+qRowBlock]
			qdot8f(&xs[i*k], &dec[0], g, m.group/16, &sums[i*g], &sc[0], &bi[0], &q.tab, &o[0])
		}
	}
}

// rows16 writes out[i] = m.dot(x, sums, r0+i) for i < len(out) with one call of the
// 16-lane kernel (q.lanes set).
func (m *qMatrix) rows16(x, sums []float32, r0 int, out []float32, q *qSIMD) {
	if len(out) == 0 {
		return
	}
	pad := (m.groups + 15) &^ 15
	if cap(q.xp) < m.cols+2*pad {
		q.xp = make([]float32, m.cols+2*pad)
	}
	xp, sp, scr := q.xp[:m.cols], q.xp[m.cols:m.cols+pad], q.xp[m.cols+pad:m.cols+2*pad]
	qPermute16(xp, x[:m.cols], m.bits)
	copy(sp, sums[:m.groups]) // the padding stays 0
	m.rows16p(xp, sp, scr, r0, out)
}

// rows16p is rows16 for x already permuted, its group sums padded with zeros to a
// multiple of 16 (sp), and scr as long (the kernel's scratch).
func (m *qMatrix) rows16p(xp, sp, scr []float32, r0 int, out []float32) {
	n := len(out)
	p := m.raw[r0*m.rowBytes : (r0+n)*m.rowBytes]
	i0, i1 := r0*m.groups, (r0+n)*m.groups
	var sc, bi *float32
	dt, es := 0, 4
	switch m.sc.DType {
	case Float32:
		sc, bi = &m.scale32[i0:i1][0], &m.bias32[i0:i1][0]
	case BFloat16, Float16:
		dt, es = 1, 2
		if m.sc.DType == Float16 {
			dt = 2
		}
		sc = halfPtr(&U16(m.sc.Data)[m.sc.Offset+i0 : m.sc.Offset+i1][0])
		bi = halfPtr(&U16(m.bi.Data)[m.bi.Offset+i0 : m.bi.Offset+i1][0])
	default:
		panic(fmt.Sprintf("kernels: qmv: %s scales", m.sc.DType))
	}
	pad := (m.groups + 15) &^ 15
	sp, scr = sp[:pad], scr[:pad]
	mask := uint16(1)<<(m.groups%16) - 1
	qmv16(m.bits, m.group/32, &xp[:m.cols][0], &p[0], n, m.groups, dt, &sp[0], sc, bi, &scr[0], &out[0], m.groups*es, m.groups/16, mask)
}

// halfPtr passes the address of half-precision scales where the kernel's signature
// says *float32: the kernel reads halves through it. It reinterprets the pointer
// variable rather than converting *uint16 to *float32, a conversion that claims a
// 4-byte object and so, at an allocation's last half, straddles its end (checkptr,
// which -race enables, aborts on it). Inlined: it costs nothing.
func halfPtr(p *uint16) *float32 { return *(**float32)(unsafe.Pointer(&p)) }

// The 16-lane qmv and qmm split a matrix into chunks of rows: qmv into chunks of
// qmv16ChunkBytes that the two cores claim in turn (256 KB: long runs of one stream
// per core; 64 KB chunks streamed 20-30% slower on two cores, e.g. the 0.8B head at
// 28-30 GB/s against 35-36 in the same run), qmm into tiles of
// qmm16TileBytes that stay in L2 while every x row passes over them. Matrices of
// fewer than qSplitBytes stay on one core.
const (
	qmv16ChunkBytes = 256 << 10
	qmm16TileBytes  = 256 << 10
	qSplitBytes     = 1 << 20
)

// rowsAll16 writes os[i*n+r] = m.dot(x row i, its sums, r) for the mRows x rows of
// xs (each cols long, sums groups long) and every row r < n, with the 16-lane
// kernels: x rows permuted once, then chunks of rows (tiles when tiled) each dotted
// with every x row, shared with h's helper when the matrix is large.
func (m *qMatrix) rowsAll16(xs, sums []float32, mRows, n int, os []float32, tiled bool, h *Helper) {
	k, g := m.cols, m.groups
	pad := (g + 15) &^ 15
	buf := getScratch(mRows*(k+pad) + 2*pad) // zeroed: the sums' padding
	defer putScratch(buf)
	xp, sp, scr := (*buf)[:mRows*k], (*buf)[mRows*k:mRows*(k+pad)], (*buf)[mRows*(k+pad):]
	for i := 0; i < mRows; i++ {
		qPermute16(xp[i*k:(i+1)*k], xs[i*k:(i+1)*k], m.bits)
		copy(sp[i*pad:], sums[i*g:(i+1)*g])
	}
	step := qmv16ChunkBytes
	if tiled {
		step = qmm16TileBytes
	}
	step = max(1, step/m.rowBytes)
	if n*m.rowBytes < qSplitBytes {
		h = nil
	}
	split := h.parallelRows
	if !tiled {
		split = h.parallelStreams
	}
	split(n, step, func(r0, r1, s int) {
		for i := 0; i < mRows; i++ {
			m.rows16p(xp[i*k:(i+1)*k], sp[i*pad:(i+1)*pad], scr[s*pad:(s+1)*pad], r0, os[i*n+r0:i*n+r1])
		}
	})
}
