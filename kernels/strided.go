package kernels

// Strided iteration shared by the elementwise Go twins: an N-d walk is split into rows
// along the last (collapsed) dimension so the inner loop is a plain strided loop.

// rowWalk describes an iteration over shape with per-argument strides and offsets.
type rowWalk struct {
	ndim    int
	shape   [MaxDims]int
	strides [4][MaxDims]int
	offs    [4]int
	nargs   int
}

// newRowWalk builds a walk over out's shape; args' layouts must broadcast to it (same
// rank, stride 0 on broadcast dims: the graph hands kernels broadcast views).
func newRowWalk(out *Layout, args ...*Layout) rowWalk {
	w := rowWalk{nargs: len(args)}
	for a, l := range args {
		w.offs[a] = l.Offset
	}
	if out.Size() == 0 {
		// rows checks only the row length: a zero dim that does not merge into the row
		// (a non-contiguous argument) would still visit one row.
		w.ndim = 1
		return w
	}
	// Drop size-1 dims and merge dims that are contiguous for every argument.
	for i := 0; i < out.NDim; i++ {
		n := out.Shape[i]
		if n == 1 {
			continue
		}
		if w.ndim > 0 {
			j := w.ndim - 1
			merge := true
			for a, l := range args {
				if w.strides[a][j] != l.Strides[i]*n {
					merge = false
					break
				}
			}
			if merge {
				w.shape[j] *= n
				for a, l := range args {
					w.strides[a][j] = l.Strides[i]
				}
				continue
			}
		}
		w.shape[w.ndim] = n
		for a, l := range args {
			w.strides[a][w.ndim] = l.Strides[i]
		}
		w.ndim++
	}
	if w.ndim == 0 {
		w.ndim = 1
		w.shape[0] = 1
	}
	return w
}

// rows calls fn for each row: n elements, the start offset of each argument and its stride
// along the row.
func (w *rowWalk) rows(fn func(n int, off, inc [4]int)) { w.rowRange(0, w.numRows(), fn) }

// numRows is how many rows rows visits.
func (w *rowWalk) numRows() int {
	r := 1
	for d := 0; d < w.ndim-1; d++ {
		r *= w.shape[d]
	}
	return r
}

// rowRange is rows for rows [r0, r1) only, in the same order: parts of one walk can
// run on different cores.
func (w *rowWalk) rowRange(r0, r1 int, fn func(n int, off, inc [4]int)) {
	last := w.ndim - 1
	n := w.shape[last]
	if n == 0 || r0 >= r1 {
		return
	}
	var inc [4]int
	for a := 0; a < w.nargs; a++ {
		inc[a] = w.strides[a][last]
	}
	var idx [MaxDims]int
	off := w.offs
	for d, r := last-1, r0; d >= 0; d-- { // row r0's index, odometer digits
		idx[d] = r % w.shape[d]
		r /= w.shape[d]
		for a := 0; a < w.nargs; a++ {
			off[a] += idx[d] * w.strides[a][d]
		}
	}
	for r := r0; r < r1; r++ {
		fn(n, off, inc) // by value: pointers would escape to fn and allocate per row
		// Advance the outer index (odometer over dims 0..last-1).
		for d := last - 1; d >= 0; d-- {
			idx[d]++
			for a := 0; a < w.nargs; a++ {
				off[a] += w.strides[a][d]
			}
			if idx[d] < w.shape[d] {
				break
			}
			for a := 0; a < w.nargs; a++ {
				off[a] -= w.strides[a][d] * w.shape[d]
			}
			idx[d] = 0
		}
	}
}
