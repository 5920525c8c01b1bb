package kernels

// A prefill chunk's gated-delta recurrence in 512-bit registers (gd512_amd64.s): a
// head's state rows go to a scratch copy interleaved by quads of rows, so a zmm
// holds the same four-column piece of four rows and gdRowsAVX's four-lane sums stay
// in their lanes (the values round exactly as gdStep's); and the rows are taken in
// blocks that stay in the L1 cache for every step of the chunk (rows never mix:
// row i's update reads only row i, k, q, v[i] and the step's scalars).

// gdChunkMinSteps is the steps from which a head takes the interleaved path: the
// copy in and out costs about two steps.
const gdChunkMinSteps = 8

// gdBlockRows is the state rows a block runs through every step: 32 rows of up to
// 128 columns are 16 KB.
const gdBlockRows = 32

// gdChunk512 reports whether a head of dk x dv state runs nt steps on the
// interleaved path.
func gdChunk512(dk, dv, nt int) bool {
	return useAVX512 && dk%4 == 0 && dv%16 == 0 && nt >= gdChunkMinSteps
}

// gdInterleave writes the dv x dk state rows of src to t by quads of rows: element
// (i, c) at ((i/4)*(dk/4) + c/4)*16 + (i%4)*4 + c%4. gdDeinterleave undoes it.
func gdInterleave(t, src []float32, dk, dv int) {
	for i := 0; i < dv; i++ {
		row, base := src[i*dk:(i+1)*dk], (i/4)*4*dk+(i%4)*4
		for c := 0; c < dk; c += 4 {
			copy(t[base+c*4:base+c*4+4], row[c:c+4])
		}
	}
}

func gdDeinterleave(s, t []float32, dk, dv int) {
	for i := 0; i < dv; i++ {
		row, base := s[i*dk:(i+1)*dk], (i/4)*4*dk+(i%4)*4
		for c := 0; c < dk; c += 4 {
			copy(row[c:c+4], t[base+c*4:base+c*4+4])
		}
	}
}

// gdStepRows512 runs one step over the interleaved rows [r0, r0+n) (n a multiple of
// 16): the same values as gdStep over those rows.
func gdStepRows512(t []float32, dk, r0, n int, k, q, v, y []float32, decay, beta float32) {
	t = t[r0*dk : (r0+n)*dk]
	k, q, v, y = k[:dk], q[:dk], v[r0:r0+n], y[r0:r0+n]
	gdRows512(&t[0], &k[0], &q[0], &v[0], &y[0], n/16, dk/4, decay, beta)
}

// gdHead512 runs a head's nt steps from state src to s on the interleaved path;
// step(t) gives step t's inputs and output row, or false for a masked step (y
// cleared, the state unchanged).
func gdHead512(src, s []float32, dk, dv, nt int, step func(t int) (ok bool, k, q, v, y []float32, decay, beta float32)) {
	buf := getScratchDirty(dv * dk)
	defer putScratch(buf)
	t := (*buf)[:dv*dk]
	gdInterleave(t, src, dk, dv)
	for r0 := 0; r0 < dv; r0 += gdBlockRows {
		n := min(gdBlockRows, dv-r0)
		for i := 0; i < nt; i++ {
			ok, k, q, v, y, decay, beta := step(i)
			if !ok {
				clear(y[r0 : r0+n])
				continue
			}
			gdStepRows512(t, dk, r0, n, k, q, v, y, decay, beta)
		}
	}
	gdDeinterleave(s, t, dk, dv)
}
