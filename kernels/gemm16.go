package kernels

// The blocked half linear (prefill and batched decode with float16 or bfloat16
// weights): gemm16_amd64.s widens each 16-weight step of four weight rows once and
// applies it to four x rows, in mmDot16's lane order with gemv16's tail, so every
// value equals the one-row kernel's bit for bit, whatever M is and however the rows
// are split between the cores. x rows are interleaved by blocks of four, 16 floats
// at a time ([block][step][row][16], zeros past K and past M).

// useGemm16 reports whether the blocked half linear computes a product of mRows x
// rows and n weight rows of k.
func useGemm16(dt DType, mRows, n, k int) bool {
	return useAVX512 && (dt == BFloat16 || dt == Float16) && mRows >= qmmMinRows && n >= 4 && k > 0
}

// halfRowsMM writes of[i*n+r] = mmDot16(x row i, w row r) for the mRows x rows of xf
// and the n rows of ws (each k long), tiles of rows shared between the cores.
func halfRowsMM(dt DType, xf []float32, ws []uint16, mRows, n, k int, of []float32, h *Helper) {
	k16 := k / 16
	steps := (k + 15) / 16
	nb := (mRows + qmmBlockRows - 1) / qmmBlockRows
	bs := steps * 16 * qmmBlockRows // floats of one block
	buf := getScratch(nb * bs)      // zeroed: past K and past M
	defer putScratch(buf)
	xi := *buf
	for i := 0; i < mRows; i++ {
		b, j := i/qmmBlockRows, i%qmmBlockRows
		xb, xr := xi[b*bs:(b+1)*bs], xf[i*k:(i+1)*k]
		for c := 0; c < k; c += 16 {
			copy(xb[c*qmmBlockRows+j*16:c*qmmBlockRows+j*16+16], xr[c:min(k, c+16)])
		}
	}
	mask := uint16(1)<<(k%16) - 1
	tiled := mRows > qmmBlockRows
	step := linear16ChunkBytes
	if tiled {
		step = linear16TileBytes
	}
	step = max(4, step/(2*k)&^3)
	if tiled {
		step = max(4, min(step, (n+31)/32*4))
	}
	var scr [2][4 * qmmBlockRows]float32
	f := func(r0, r1, s int) {
		quads, rest := (r1-r0)/4, (r1-r0)%4
		ob := scr[s][:]
		for b := 0; b < nb; b++ {
			x0 := &xi[b*bs]
			rows := min(qmmBlockRows, mRows-b*qmmBlockRows)
			if quads > 0 {
				if rows == qmmBlockRows {
					gemm16x4(dt, x0, &ws[r0*k], 2*k, quads, k16, mask, &of[b*qmmBlockRows*n+r0], 4*n)
				} else {
					for q := 0; q < quads; q++ {
						r := r0 + 4*q
						gemm16x4(dt, x0, &ws[r*k], 2*k, 1, k16, mask, &ob[0], 16)
						for j := 0; j < rows; j++ {
							copy(of[(b*qmmBlockRows+j)*n+r:(b*qmmBlockRows+j)*n+r+4], ob[4*j:4*j+4])
						}
					}
				}
			}
			if rest > 0 { // the quad ending at r1-1
				gemm16x4(dt, x0, &ws[(r1-4)*k], 2*k, 1, k16, mask, &ob[0], 16)
				for j := 0; j < rows; j++ {
					copy(of[(b*qmmBlockRows+j)*n+r1-rest:(b*qmmBlockRows+j)*n+r1], ob[4*j+4-rest:4*j+4])
				}
			}
		}
	}
	if tiled && mRows*n*k >= qmmWideMACs {
		h.parallelWide(n, step, f)
		return
	}
	if 2*n*k < linear16SplitBytes {
		h = nil
	}
	if tiled {
		h.parallelRows(n, step, f)
	} else {
		h.parallelStreams(n, step, f)
	}
}
