package kernels

import "sync"

// The blocked 16-lane product (prefill and batched decode at 4 and 8 bits): the
// kernels decode each 32-code chunk of weights once and apply it to several x rows,
// so a product of M x rows reads each weight once per block of x rows (once from
// memory for a batched decode step of up to eight rows) and spends most of its
// instructions on fused multiply-adds. Which kernel takes a tile:
//   - a decode step's two to eight rows go one weight row at a time, a block of four
//     x rows a pass (stepRows; qmm16x8_amd64.s: one sequential stream, no padding
//     rows) while its x rows stay in L1;
//   - a prefill's pairs of four-row blocks go one weight row and eight x rows a pass
//     (qmm16x8_amd64.s, every accumulator in a register) while eight x rows stay in
//     L1 (K <= 1024);
//   - the rest four weight rows and four x rows a pass (qmm16w4_amd64.s), a tile's
//     last rows by pairs (qmm16_amd64.s).
//
// Every (x row, weight row) value keeps dot16's 16-lane order exactly, so it equals
// qmv's value bit for bit, whatever M is and however the rows are split between the
// cores.
//
// Layouts: x rows are permuted by qPermute16 and interleaved by blocks of four, chunk
// by chunk ([block][chunk][row][32]; rows past M are zeros); the group sums the same
// way by blocks of 16 groups ([block][16-group block][row][16], zero-padded); the
// scales and biases are float32 rows of whole 16-group blocks (the matrix's own when
// they are float32 and the groups a multiple of 16, else widened per tile of rows).

// qmmMinRows is the x rows from which a 16-lane product takes the blocked kernel.
const qmmMinRows = 2

// qmmBlockRows is the x rows of one kernel pass.
const qmmBlockRows = 4

// qmmW1Bytes bounds a batched decode step's x rows (M x K float32) for the one-row
// kernels: a decode step streams its weights from memory, one row a pass reads one
// sequential stream and computes no padding rows (at M = 2, K = 1024, 2.5 ms a step
// against 3.5 with the four-row kernel), but at M = 2, K = 3584 it was 50% slower.
const qmmW1Bytes = 16 << 10

// qmmStepRows is the most x rows a decode step's product runs as one-weight-row
// passes (stepRows): a server's batch of up to eight requests. Above it the product
// is tiled like a prefill's.
const qmmStepRows = 2 * qmmBlockRows

// qmmX8Bytes bounds the eight-row kernel's x block (8 x K float32, read from memory by
// every multiply-add): it runs where the block stays in L1 (K <= 1024; at K = 2048 and
// 3584 it was 40-75% slower than the four-row kernel, reading x from L2).
const qmmX8Bytes = 32 << 10

// qmmWideMACs is the multiply-adds (M x N x K) from which a blocked product also
// starts a goroutine for the second core when no helper takes its offer (a prefill
// evaluated by the caller itself): a goroutine's start is noise against a few
// milliseconds of work.
const qmmWideMACs = 1 << 25

// useQmm16 reports whether the blocked kernel computes m's product with mRows x rows
// and n weight rows.
func (m *qMatrix) useQmm16(mRows, n int) bool {
	return qAsm16() && qLanes16(m.bits) && m.group%32 == 0 && m.groups > 0 &&
		mRows >= qmmMinRows && n >= 2
}

// qmmScratch is one goroutine's scratch for a tile: widened scales and biases, and
// the kernel's output rows.
type qmmScratch struct {
	sc, bi, out []float32
	acc         []float32 // the four-row kernel's group accumulators
}

// qmmScratchPool keeps the two goroutines' scratch between products.
var qmmScratchPool = sync.Pool{New: func() any { return new([2]qmmScratch) }}

// qmmAccFloats is the four-row kernel's accumulators: 2 parities x 16 pairs x 16 lanes.
const qmmAccFloats = 2 * 16 * 16

// rowsMM16 writes os[i*n+r] = m.dot(x row i, its sums, r) for the mRows x rows of xs
// and every row r < n (useQmm16 true), tiles of rows shared between the cores.
func (m *qMatrix) rowsMM16(xs, sums []float32, mRows, n int, os []float32, h *Helper) {
	k, g := m.cols, m.groups
	pad := (g + 15) &^ 15
	nb := (mRows + qmmBlockRows - 1) / qmmBlockRows
	buf := getScratchDirty(nb * qmmBlockRows * (k + pad))
	defer putScratch(buf)
	xi := (*buf)[:nb*qmmBlockRows*k]
	si := (*buf)[len(xi):]
	clear(si)                                       // padding groups and rows
	clear(xi[(mRows/qmmBlockRows)*qmmBlockRows*k:]) // a last block's missing rows
	h.splitRows(mRows, k, func(r0, r1 int) {
		xpp := getScratchDirty(k)
		defer putScratch(xpp)
		xp := *xpp
		for i := r0; i < r1; i++ {
			qPermute16(xp, xs[i*k:(i+1)*k], m.bits)
			b, j := i/qmmBlockRows, i%qmmBlockRows
			xb, sb := xi[b*qmmBlockRows*k:], si[b*qmmBlockRows*pad:]
			for c := 0; c < k; c += 32 {
				copy(xb[c*qmmBlockRows+j*32:c*qmmBlockRows+j*32+32], xp[c:c+32])
			}
			for gg := 0; gg < g; gg += 16 {
				copy(sb[gg*qmmBlockRows+j*16:], sums[i*g+gg:i*g+min(g, gg+16)])
			}
		}
	})
	direct := m.scale32 != nil && g == pad
	step1 := 4*min(mRows, qmmBlockRows)*k <= qmmW1Bytes && mRows <= qmmStepRows // a decode step
	tiled := mRows > qmmBlockRows && !step1
	step := qmv16ChunkBytes
	if tiled {
		step = qmm16TileBytes
	}
	step = max(4, step/m.rowBytes&^3)  // whole quads of rows but a tile's last rows
	if tiled || mRows > qmmBlockRows { // at least eight tiles, so the two cores end together
		step = max(4, min(step, (n+31)/32*4))
	}
	scr := qmmScratchPool.Get().(*[2]qmmScratch) // a decode step's tiles reuse their buffers
	defer qmmScratchPool.Put(scr)
	f := func(r0, r1, s int) {
		sr := &scr[s]
		lo := min(r0, r1-2) // a tile of odd length ends with the pair (r1-2, r1-1)
		quads := (r1 - r0) / 4
		rest := r0 + 4*quads // rows [rest, r1) go by pairs, the last maybe alone
		pairs := (r1 - rest) / 2
		odd := (r1-rest)%2 == 1
		var sc, bi []float32
		switch {
		case direct:
			sc, bi = m.scale32[lo*g:r1*g], m.bias32[lo*g:r1*g]
		case !(step1 && m.useHalfScales()):
			sc, bi = m.padScales(sr, lo, r1, pad)
		}
		nOut := qmmBlockRows * max(4*quads, 2*(pairs+1))
		if cap(sr.out) < nOut {
			sr.out = make([]float32, nOut)
		}
		if sr.acc == nil {
			sr.acc = make([]float32, qmmAccFloats)
		}
		ob := sr.out[:nOut]
		ss, chunks := pad*4, m.group/32
		b0 := 0 // blocks below b0 are done by the one-row kernels
		switch o := (r0 - lo) * pad; {
		case tiled && 8*4*k <= qmmX8Bytes: // a prefill: pairs of whole blocks, eight x rows a pass
			for ; b0+1 < mRows/qmmBlockRows; b0 += 2 {
				qmm16w1(m.bits, 8, &xi[b0*qmmBlockRows*k], 4*qmmBlockRows*k, &m.raw[r0*m.rowBytes], m.rowBytes, r1-r0, g, chunks,
					&si[b0*qmmBlockRows*pad], 4*qmmBlockRows*pad, pad/16, &sc[o], &bi[o], ss, &os[b0*qmmBlockRows*n+r0], 4*n)
			}
		case step1: // a batched decode step: a block of its rows a pass, the tile hot for the next
			if sc != nil {
				sc, bi = sc[o:], bi[o:]
			}
			m.stepRows(xi, si, mRows, n, r0, r1, pad, sc, bi, os, sr)
			b0 = nb
		}
		for b := b0; b < nb; b++ {
			x0, s0 := &xi[b*qmmBlockRows*k], &si[b*qmmBlockRows*pad]
			rows := min(qmmBlockRows, mRows-b*qmmBlockRows)
			if quads > 0 {
				o := (r0 - lo) * pad
				if rows == qmmBlockRows { // straight to the output rows
					qmm16x4w4(m.bits, x0, &m.raw[r0*m.rowBytes], m.rowBytes, quads, g, chunks, s0, pad/16, &sc[o], &bi[o], ss, &os[b*qmmBlockRows*n+r0], 4*n, &sr.acc[0])
				} else {
					qmm16x4w4(m.bits, x0, &m.raw[r0*m.rowBytes], m.rowBytes, quads, g, chunks, s0, pad/16, &sc[o], &bi[o], ss, &ob[0], 16*quads, &sr.acc[0])
					for j := 0; j < rows; j++ {
						copy(os[(b*qmmBlockRows+j)*n+r0:], ob[j*4*quads:(j+1)*4*quads])
					}
				}
			}
			if pairs > 0 {
				o := (rest - lo) * pad
				if rows == qmmBlockRows {
					qmm16x4(m.bits, x0, &m.raw[rest*m.rowBytes], m.rowBytes, pairs, g, chunks, s0, pad/16, &sc[o], &bi[o], ss, &os[b*qmmBlockRows*n+rest], 4*n)
				} else {
					qmm16x4(m.bits, x0, &m.raw[rest*m.rowBytes], m.rowBytes, pairs, g, chunks, s0, pad/16, &sc[o], &bi[o], ss, &ob[0], 8*pairs)
					for j := 0; j < rows; j++ {
						copy(os[(b*qmmBlockRows+j)*n+rest:], ob[j*2*pairs:(j+1)*2*pairs])
					}
				}
			}
			if odd {
				o := (r1 - 2 - lo) * pad
				qmm16x4(m.bits, x0, &m.raw[(r1-2)*m.rowBytes], m.rowBytes, 1, g, chunks, s0, pad/16, &sc[o], &bi[o], ss, &ob[0], 8)
				for j := 0; j < rows; j++ {
					os[(b*qmmBlockRows+j)*n+r1-1] = ob[2*j+1]
				}
			}
		}
	}
	if tiled && mRows*n*k >= qmmWideMACs {
		h.parallelWide(n, step, f)
		return
	}
	if n*m.rowBytes < qSplitBytes {
		h = nil
	}
	if tiled {
		h.parallelRows(n, step, f)
	} else {
		h.parallelStreams(n, step, f)
	}
}

// stepRows runs a decode step's x rows (at most qmmStepRows) over weight rows
// [r0, r1) with the one-weight-row kernels, a block of four x rows a pass (both blocks
// in one pass where eight rows of x fit qmmX8Bytes): the tile's codes come from
// memory for the first pass and from cache for the second. A block of one row runs as
// two, its zero padding row's values going to scratch. sc and bi are the tile's
// float32 scale rows of pad, or nil: the matrix's own bfloat16 rows (useHalfScales),
// which the kernels widen as they read them.
func (m *qMatrix) stepRows(xi, si []float32, mRows, n, r0, r1, pad int, sc, bi, os []float32, sr *qmmScratch) {
	k, g, chunks := m.cols, m.groups, m.group/32
	p := &m.raw[r0*m.rowBytes]
	pass := func(xr int, x *float32, xStride int, sums *float32, sumStride int, out *float32, ldo int) {
		if sc == nil {
			hs, hb := U16(m.sc.Data)[m.sc.Offset+r0*g:], U16(m.bi.Data)[m.bi.Offset+r0*g:]
			qmm16w1h(m.bits, xr, x, xStride, p, m.rowBytes, r1-r0, g, chunks,
				sums, sumStride, pad/16, &hs[0], &hb[0], 2*g, out, ldo)
			return
		}
		qmm16w1(m.bits, xr, x, xStride, p, m.rowBytes, r1-r0, g, chunks,
			sums, sumStride, pad/16, &sc[0], &bi[0], 4*pad, out, ldo)
	}
	if mRows == 2*qmmBlockRows && 8*4*k <= qmmX8Bytes {
		pass(8, &xi[0], 4*qmmBlockRows*k, &si[0], 4*qmmBlockRows*pad, &os[r0], 4*n)
		return
	}
	for b := 0; b*qmmBlockRows < mRows; b++ {
		rows := min(qmmBlockRows, mRows-b*qmmBlockRows)
		x, sums := &xi[b*qmmBlockRows*k], &si[b*qmmBlockRows*pad]
		if rows > 1 {
			pass(rows, x, 0, sums, 0, &os[b*qmmBlockRows*n+r0], 4*n)
			continue
		}
		if cap(sr.out) < 2*(r1-r0) {
			sr.out = make([]float32, 2*(r1-r0))
		}
		pass(2, x, 0, sums, 0, &sr.out[0], 4*(r1-r0))
		copy(os[b*qmmBlockRows*n+r0:], sr.out[:r1-r0])
	}
}

// useHalfScales reports whether a decode step's kernels read m's bfloat16 scales
// and biases as they are: whole 16-group blocks a row, nothing to pad.
func (m *qMatrix) useHalfScales() bool {
	return m.scale32 == nil && m.sc.DType == BFloat16 && m.groups%16 == 0
}

// padScales widens the scales and biases of rows [r0, r1) to float32 rows of pad
// (zero-padded) in sr's buffers, exactly as scaleBias widens them.
func (m *qMatrix) padScales(sr *qmmScratch, r0, r1, pad int) ([]float32, []float32) {
	n, g := (r1-r0)*pad, m.groups
	if cap(sr.sc) < n {
		sr.sc, sr.bi = make([]float32, n), make([]float32, n)
	}
	sc, bi := sr.sc[:n], sr.bi[:n]
	if g == pad && m.sc.DType == BFloat16 { // one vector pass over the tile's rows
		i0, i1 := r0*g, r1*g
		widenBF16(sc, U16(m.sc.Data)[m.sc.Offset+i0:m.sc.Offset+i1])
		widenBF16(bi, U16(m.bi.Data)[m.bi.Offset+i0:m.bi.Offset+i1])
		return sc, bi
	}
	for r := r0; r < r1; r++ {
		so, bo := sc[(r-r0)*pad:(r-r0+1)*pad], bi[(r-r0)*pad:(r-r0+1)*pad]
		i0 := r * g
		switch m.sc.DType {
		case Float32:
			copy(so, m.scale32[i0:i0+g])
			copy(bo, m.bias32[i0:i0+g])
		case BFloat16:
			widenBF16(so[:g], U16(m.sc.Data)[m.sc.Offset+i0:m.sc.Offset+i0+g])
			widenBF16(bo[:g], U16(m.bi.Data)[m.bi.Offset+i0:m.bi.Offset+i0+g])
		default:
			ss := U16(m.sc.Data)[m.sc.Offset+i0 : m.sc.Offset+i0+g]
			bs := U16(m.bi.Data)[m.bi.Offset+i0 : m.bi.Offset+i0+g]
			if useF16C && g%8 == 0 {
				f16ToF32F16C(&so[0], &ss[0], g/8)
				f16ToF32F16C(&bo[0], &bs[0], g/8)
			} else {
				for i := range ss {
					so[i], bo[i] = F16ToF32(ss[i]), F16ToF32(bs[i])
				}
			}
		}
		clear(so[g:])
		clear(bo[g:])
	}
	return sc, bi
}
