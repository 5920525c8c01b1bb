package kernels

import (
	"math"
	"sync"
	"unsafe"
)

// The bfloat16 pair-dot prompt path (MatmulParams.BFDot, asked for by
// graph.Options.FastPrompts for a forward of two or more tokens a sequence): a
// bfloat16 linear whose x is bfloat16 too (a bfloat16 model's activations) takes
// VDPBF16PS on a CPU with AVX512_BF16, 32 products an instruction against 16 for a
// float32 FMA. The products are exact (8-bit significands); only the order and the
// rounding of the sums differ from the float path's (mmDot16), so after the output's
// own rounding to bfloat16 most values are the same. Its values do not depend on M, on
// the tiles or on the cores.
//
// bfDotRef defines the value: over the pairs of K in order, acc = ftz(fma(w[2s+1],
// x[2s+1], acc)) then acc = ftz(fma(w[2s], x[2s], acc)), subnormal inputs read as zero
// (VDPBF16PS's DAZ and FTZ). A panel is 16 weight rows, [pair step][row][2 bfloat16].

// bfXRows is the x rows of a kernel pass (bfp2x1..bfp2x8).
const bfXRows = 8

// useBFDot reports whether a bfloat16 linear of K columns takes the pair-dot kernels.
func useBFDot(k int) bool { return useAVX512BF16 && k > 0 && k%2 == 0 }

// bfDotRef is the pair-dot value of x row x and weight row w (bfloat16, one length).
func bfDotRef(x, w []uint16) float32 {
	var acc float32
	for s := 0; s+1 < len(x); s += 2 {
		acc = bfStep(acc, w[s+1], x[s+1])
		acc = bfStep(acc, w[s], x[s])
	}
	return acc
}

// bfStep is one VDPBF16PS product: acc + w*x rounded once, subnormals flushed.
func bfStep(acc float32, w, x uint16) float32 {
	return flushSub(fma32(flushSub(BF16ToF32(w)), flushSub(BF16ToF32(x)), flushSub(acc)))
}

// flushSub is v with a subnormal read as a zero of its sign.
func flushSub(v float32) float32 {
	if b := math.Float32bits(v); b&0x7f800000 == 0 {
		return math.Float32frombits(b & 0x80000000)
	}
	return v
}

// bfScratch is one goroutine's repacked panels and edge output.
type bfScratch struct {
	pairs []uint32
	out   []float32
}

var bfScratchPool = sync.Pool{New: func() any { return new([2]bfScratch) }}

// halfRowsBFDot writes of[i*n+r] = bfDotRef(x row i, weight row r) for the mRows x
// rows of xs and every row r < n of ws (bfloat16, K = k; useBFDot true), tiles of
// weight rows shared between the cores.
func halfRowsBFDot(xs, ws []uint16, mRows, n, k int, of []float32, h *Helper) {
	steps := k / 2
	tile := max(2*panelRows, min(8*panelRows, q8TileBytes/(2*k))&^(2*panelRows-1))
	tile = min(tile, max(2*panelRows, (n+4*panelRows-1)/(4*panelRows)*(2*panelRows)))
	scr := bfScratchPool.Get().(*[2]bfScratch)
	defer bfScratchPool.Put(scr)
	f := func(r0, r1, s int) {
		sr := &scr[s]
		pairs := (r1 - r0 + 2*panelRows - 1) / (2 * panelRows)
		rows := 2 * pairs * panelRows
		if cap(sr.pairs) < rows*steps {
			sr.pairs = make([]uint32, rows*steps)
		}
		pw := steps * panelRows // one panel's pairs
		for p := 0; p < rows/panelRows; p++ {
			first := r0 + p*panelRows
			if n := min(panelRows, r1-first); n > 0 {
				packPanel(sr.pairs[p*pw:(p+1)*pw], bytesOf16(ws[first*k:r1*k]), 2*k, n, steps, false)
			} else {
				clear(sr.pairs[p*pw : (p+1)*pw])
			}
		}
		if cap(sr.out) < bfXRows*2*panelRows {
			sr.out = make([]float32, bfXRows*2*panelRows)
		}
		for x0 := 0; x0 < mRows; x0 += bfXRows {
			xr := min(bfXRows, mRows-x0)
			for p := 0; p < pairs; p++ {
				c0 := r0 + 2*panelRows*p
				edge := c0+2*panelRows > n
				out, ldo := &of[x0*n+c0], 4*n
				if edge {
					out, ldo = &sr.out[0], 4*2*panelRows
				}
				bfKernel(xr, &sr.pairs[2*p*pw], 4*pw, &xs[x0*k], 2*k, steps, out, ldo)
				if edge {
					for i := 0; i < xr; i++ {
						copy(of[(x0+i)*n+c0:(x0+i+1)*n], sr.out[i*2*panelRows:(i+1)*2*panelRows])
					}
				}
			}
		}
	}
	h.parallelWide(n, tile, f)
}

// bytesOf16 views bfloat16 values as their little-endian bytes.
func bytesOf16(v []uint16) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), 2*len(v))
}
