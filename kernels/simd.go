package kernels

// The matrix-vector loops of linear, switch_glu and sdpa. Each has a portable Go form
// that is the definition and, on amd64 with AVX, an assembly form that computes the
// same values bit for bit (same summation order, a rounded multiply then a rounded add,
// no FMA); simd_test.go checks the two agree exactly.

// gemvF32 writes out[r] = mmDot(x, row r of w) for r < len(out), row r starting at
// element r*ldw of w.
func gemvF32(x, w []float32, ldw int, out []float32) {
	k, n := len(x), len(out)
	if n == 0 {
		return
	}
	if k == 0 {
		clear(out)
		return
	}
	w = w[:(n-1)*ldw+k] // one bounds check for every row
	r := 0
	if useAVX && k%4 == 0 && n >= 8 {
		blocks := n / 8
		gemv8AVX(&x[0], &w[0], uintptr(ldw)*4, &out[0], blocks, k/4)
		r = blocks * 8
	}
	for ; r < n; r++ {
		out[r] = mmDot(x, w[r*ldw:r*ldw+k])
	}
}

// axpyRows adds a[j] * (row j of v) to y for every j in order, row j starting at
// element j*ldv, skipping a[j] == 0 (a masked key; for finite v adding 0*v changes
// nothing anyway). Each y element is a sequential sum over j.
func axpyRows(y, a, v []float32, ldv int) {
	n, d := len(a), len(y)
	if n == 0 || d == 0 {
		return
	}
	v = v[:(n-1)*ldv+d]
	c := 0
	if useAVX {
		for ; c+32 <= d; c += 32 {
			axpyRowsAVX(&y[c], &a[0], &v[c], uintptr(ldv)*4, n, 4)
		}
		if c+16 <= d { // 16 columns in one pass over the keys (head size 16)
			axpyRowsAVX(&y[c], &a[0], &v[c], uintptr(ldv)*4, n, 2)
			c += 16
		}
		for ; c+8 <= d; c += 8 {
			axpyRowsAVX(&y[c], &a[0], &v[c], uintptr(ldv)*4, n, 1)
		}
	}
	if c == d {
		return
	}
	for j, w := range a {
		if w != 0 {
			axpy32(y[c:], w, v[j*ldv+c:])
		}
	}
}

// prefetchMaxFloats bounds what prefetch asks for per matrix (64 KiB): the small
// matrices of a decode step gain most, and a large one streams well on the hardware's
// own prefetchers, where asking for all of it would only push earlier lines out of L2.
const prefetchMaxFloats = 16384

// prefetch asks for the weights a kernel is about to read, all at once. A decode step
// reads many small matrices, each once, from memory (a layer's weights do not stay in
// cache from one token to the next); the hardware prefetchers learn each stream anew
// at every 4 KiB page, so a kernel that asks for its matrices up front keeps many more
// cache misses in flight. Measured on the repro (kernels' per-launch timers, a 2-core
// Zen 5 VM): moe_block 8.5 -> 6 us. A hint only: it changes no value.
func prefetch(ws ...[]float32) {
	for _, w := range ws {
		if n := min(len(w), prefetchMaxFloats); n > 0 {
			prefetchLines(&w[0], n)
		}
	}
}

// prefetchExperts prefetches the gate, up and down matrices (n floats each) of the
// experts in ids, once the router has chosen them.
func prefetchExperts(gs, us, ds []float32, ids []int32, E, n int) {
	for _, id := range ids {
		if e, ok := gatherIndex(id, E); ok {
			prefetch(gs[e*n:(e+1)*n], us[e*n:(e+1)*n], ds[e*n:(e+1)*n])
		}
	}
}
