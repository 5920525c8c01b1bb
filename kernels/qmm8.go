package kernels

import (
	"encoding/binary"
	"math"
	"sync"
	"unsafe"
)

// The int8 prompt path (QuantParams.Int8, asked for by graph.Options.FastPrompts for
// a forward of two or more tokens a sequence): at 4 and 8 bits, on a CPU with
// AVX512-VNNI, each x row is quantized to signed bytes per group (scale max|x| / 127,
// round to even) and every group's products are exact integer sums, four a VPDPBUSD
// lane, as llama.cpp's prompt path does. It is not the float path's value: the x
// rounding moves the logits (docs/performance.md has figures), so it is opt-in, and a
// decode step (one token a sequence) never takes it. Its values do not depend on M, on
// the tiles or on the cores: a prompt batched with others gets the bits it gets alone.
//
// q8Ref defines the value: for x row i and weight row r, over the groups g in order,
//
//	acc = fma(scale[r][g], float32(isum[g]) * xscale[i][g], acc)
//	acc = fma(bias[r][g], xsum[i][g], acc)
//
// where isum is the exact sum of code * xcode over the group and xsum the float group
// sum the float path uses too (qSum). A group with a non-finite sum gets xscale NaN,
// so a NaN or infinite activation reaches the output as in the float path.
//
// Layouts: a panel is 16 weight rows, its codes unsigned bytes [4-code step][row][4]
// (steps in k order) and its scales [group][16 scales, 16 biases]; an x row is a
// record of its K signed codes, its group scales and its group sums.

// panelRows is the weight rows of a panel (both fast paths): one 32-bit lane each.
const panelRows = 16

// q8XRows is the x rows of a kernel pass (q8p2x1..q8p2x6).
const q8XRows = 6

// q8TileBytes bounds the codes of the weight rows one goroutine repacks and then runs
// every x row against: they stay in its L2.
const q8TileBytes = 256 << 10

// useQmm8 reports whether the int8 kernels compute m's product.
func (m *qMatrix) useQmm8() bool {
	return useVNNI && (m.bits == 4 || m.bits == 8) && m.group%16 == 0 && m.groups > 0
}

// q8XRecord is the bytes of one quantized x row: K codes, then its group scales and
// group sums (float32), rounded up to a cache line.
func q8XRecord(k, groups int) int { return (k + 8*groups + 63) &^ 63 }

// q8QuantRowRef quantizes x (groups x group floats) into codes q and group scales d:
// q8QuantRow's definition.
func q8QuantRowRef(x []float32, group int, q []int8, d []float32) {
	for g := range d {
		xs := x[g*group : (g+1)*group]
		var amax float32
		for _, v := range xs {
			if a := float32(math.Abs(float64(v))); a > amax {
				amax = a
			}
		}
		d[g] = amax / 127
		var inv float32
		if amax > 0 {
			inv = 127 / amax
		}
		for j, v := range xs {
			q[g*group+j] = q8Round(v * inv)
		}
	}
}

// q8Round is VCVTPS2DQ then VPMOVSDB: round half to even, saturate to int8 (NaN and
// values outside int32 become -128).
func q8Round(v float32) int8 {
	r := math.RoundToEven(float64(v))
	switch {
	case r != r || r >= 1<<31 || r < -(1<<31):
		return -128
	case r > 127:
		return 127
	case r < -128:
		return -128
	}
	return int8(r)
}

// q8Code is code k of row r.
func (m *qMatrix) q8Code(r, k int) int32 {
	p := m.raw[r*m.rowBytes:]
	if m.bits == 8 {
		return int32(p[k])
	}
	return int32(p[k/2]>>(4*(k%2))) & 15
}

// q8Ref is the int8 path's value of x row x (its group sums sums) and weight row r.
func (m *qMatrix) q8Ref(x, sums []float32, r int) float32 {
	q := make([]int8, m.cols)
	d := make([]float32, m.groups)
	q8QuantRowRef(x, m.group, q, d)
	var acc float32
	for g := 0; g < m.groups; g++ {
		var isum int32
		for k := g * m.group; k < (g+1)*m.group; k++ {
			isum += m.q8Code(r, k) * int32(q[k])
		}
		xs := d[g]
		if !finite32(sums[g]) {
			xs = float32(math.NaN())
		}
		s, b := m.scaleBias(r, g)
		acc = fma32(s, float32(isum)*xs, acc)
		acc = fma32(b, sums[g], acc)
	}
	return acc
}

func finite32(v float32) bool { return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) }

// packPanel writes a panel: dst[s*16+j] = step s of row j for s < steps, rows j <
// rows at base[j*ld:] (the rest zeros). A step is a dword, or with nibbles a 16-bit
// quad of 4-bit codes spread to one byte each. Whole panels go through the assembly
// by blocks of 16 steps.
func packPanel(dst []uint32, base []byte, ld, rows, steps int, nibbles bool) {
	s0 := 0
	if rows == panelRows && useAVX512 && steps >= 16 {
		width := 4 * steps
		if nibbles {
			width = 2 * steps
		}
		_ = base[15*ld+width-1] // the last row's last byte the assembly reads
		_ = dst[steps*panelRows-1]
		if nibbles {
			q8PanelNibbles(&dst[0], &base[0], ld, steps/16)
		} else {
			q8PanelDwords(&dst[0], &base[0], ld, steps/16)
		}
		s0 = steps &^ 15
	}
	for s := s0; s < steps; s++ {
		o := dst[s*panelRows : s*panelRows+panelRows : s*panelRows+panelRows]
		for j := range o {
			var v uint32
			if j < rows {
				if nibbles {
					v = uint32(binary.LittleEndian.Uint16(base[j*ld+2*s:]))
					v = (v | v<<8) & 0x00FF00FF
					v = (v | v<<4) & 0x0F0F0F0F
				} else {
					v = binary.LittleEndian.Uint32(base[j*ld+4*s:])
				}
			}
			o[j] = v
		}
	}
}

// q8Scratch is one goroutine's repacked tile: codes and scale records.
type q8Scratch struct {
	codes []uint32
	recs  []float32
	out   []float32
	wide  qmmScratch // a panel's scales and biases widened to float32
}

var q8ScratchPool = sync.Pool{New: func() any { return new([2]q8Scratch) }}

// rowsMM8 writes os[i*n+r] = m.q8Ref(x row i, its sums, r) for the mRows x rows of xs
// and every row r < n (useQmm8 true), tiles of weight rows shared between the cores.
func (m *qMatrix) rowsMM8(xs, sums []float32, mRows, n int, os []float32, h *Helper) {
	k, g := m.cols, m.groups
	ld := q8XRecord(k, g)
	xb := getScratchDirty(mRows * ld / 4)
	defer putScratch(xb)
	xq := unsafe.Slice((*byte)(unsafe.Pointer(&(*xb)[0])), mRows*ld)
	h.splitRows(mRows, k, func(r0, r1 int) {
		for i := r0; i < r1; i++ {
			rec := xq[i*ld : (i+1)*ld]
			d := unsafe.Slice((*float32)(unsafe.Pointer(&rec[k])), 2*g)
			q8QuantRow(&xs[i*k], g, m.group/16, &rec[0], &d[0])
			copy(d[g:], sums[i*g:(i+1)*g])
			for j, s := range d[g:] {
				if !finite32(s) {
					d[j] = float32(math.NaN())
				}
			}
		}
	})
	tile := max(2*panelRows, min(8*panelRows, q8TileBytes/k)&^(2*panelRows-1))
	tile = min(tile, max(2*panelRows, (n+4*panelRows-1)/(4*panelRows)*(2*panelRows))) // at least two tiles a core
	scr := q8ScratchPool.Get().(*[2]q8Scratch)
	defer q8ScratchPool.Put(scr)
	f := func(r0, r1, s int) {
		sr := &scr[s]
		pairs := (r1 - r0 + 2*panelRows - 1) / (2 * panelRows)
		m.q8Repack(sr, r0, r1, 2*pairs*panelRows)
		pw, pr := k*panelRows/4, g*2*panelRows // one panel's codes (uint32) and records (float32)
		if cap(sr.out) < q8XRows*2*panelRows {
			sr.out = make([]float32, q8XRows*2*panelRows)
		}
		for x0 := 0; x0 < mRows; x0 += q8XRows {
			rows := min(q8XRows, mRows-x0)
			rec := xq[x0*ld:]
			for p := 0; p < pairs; p++ {
				c0 := r0 + 2*panelRows*p
				out, ldo := &os[x0*n+c0], 4*n
				if c0+2*panelRows > n {
					out, ldo = &sr.out[0], 4*2*panelRows
				}
				q8Kernel(rows, &sr.codes[2*p*pw], 4*pw, &sr.recs[2*p*pr], 4*pr,
					&rec[0], ld, &rec[k], 4*g, g, m.group/4, out, ldo)
				if c0+2*panelRows > n {
					for i := 0; i < rows; i++ {
						copy(os[(x0+i)*n+c0:(x0+i+1)*n], sr.out[i*2*panelRows:(i+1)*2*panelRows])
					}
				}
			}
		}
	}
	h.parallelWide(n, tile, f)
}

// q8Repack writes weight rows [r0, r1) as panels into sr: codes [panel][step][16][4]
// and records [panel][group][16 scales, 16 biases], rows past r1 zero, rows panels' in all.
func (m *qMatrix) q8Repack(sr *q8Scratch, r0, r1, rows int) {
	k, g := m.cols, m.groups
	nc, nr := rows*k/4, rows*g*2
	if cap(sr.codes) < nc {
		sr.codes = make([]uint32, nc)
	}
	if cap(sr.recs) < nr {
		sr.recs = make([]float32, nr)
	}
	codes, recs := sr.codes[:nc], sr.recs[:nr]
	steps := k / 4
	for p := 0; p < rows/panelRows; p++ {
		pc, pr := codes[p*steps*panelRows:(p+1)*steps*panelRows], recs[p*g*2*panelRows:]
		first := r0 + p*panelRows
		if n := min(panelRows, r1-first); n > 0 {
			packPanel(pc, m.raw[first*m.rowBytes:r1*m.rowBytes], m.rowBytes, n, steps, m.bits == 4)
		} else {
			clear(pc)
		}
		n := max(0, min(panelRows, r1-first))
		var sc, bi []float32
		if n > 0 {
			sc, bi = m.padScales(&sr.wide, first, first+n, g) // widened once, a row at a time
		}
		for gg := 0; gg < g; gg++ {
			rec := pr[gg*2*panelRows : (gg+1)*2*panelRows]
			for j := 0; j < n; j++ {
				rec[j], rec[panelRows+j] = sc[j*g+gg], bi[j*g+gg]
			}
			clear(rec[n:panelRows])
			clear(rec[panelRows+n:])
		}
	}
}

// FastPromptPaths reports which of graph.Options.FastPrompts' paths this CPU has: the
// int8 path at 4 and 8 bits (AVX512-VNNI) and the bfloat16 pair-dot path
// (AVX512_BF16). A format whose path is missing keeps the float path.
func FastPromptPaths() (int8, bf16 bool) { return useVNNI, useAVX512BF16 }
