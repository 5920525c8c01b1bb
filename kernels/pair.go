package kernels

import "unsafe"

// Two quantized decode products of equal size (an MLP's gate and up) run at once, one
// on each core, rather than one after the other, each split between the cores: each
// core then reads one whole matrix front to back, with no split to start and no wait
// for the other core's last chunk. Each product runs exactly as alone (its rows, the
// same arithmetic), so results do not depend on the pairing. The 0.8B decode,
// alternating in one process (five pairs): 4-bit 63.3 -> 65.5 tok/s, 8-bit 41.3 ->
// 42.6 (medians). Half-weight products are not paired: their rows are bound by one
// core's arithmetic (about 33 GB/s in cache), so a core alone reads a whole matrix no
// faster than half of it, and a helper that comes late holds up a whole product where
// a split loses one chunk; paired, the bfloat16 decode was slower (24.7 -> 23.1).

// pairWindow is how far ahead PairAhead looks for a partner: the MLP's up product
// follows its gate product two launches later (the silu of gate in between).
const pairWindow = 3

// pairMinBytes is the least weight bytes of a paired product: the size from which a
// product splits its rows between the cores (qSplitBytes); below it a round trip
// between the cores costs what it saves.
const pairMinBytes = qSplitBytes

// PairAhead returns the index j of a launch after i (within pairWindow) that may run
// at the same time as launch i, on the other core: both are one-row quantized products
// (qmv, decode) of the same weight bytes (at least pairMinBytes), j reads nothing that
// the launches from i up to j write, and none of them reads or writes j's output. It
// returns -1 when there is none.
func PairAhead(batch []Launch, i int) int {
	w := pairBytes(&batch[i])
	if w < pairMinBytes {
		return -1
	}
	for j := i + 1; j < len(batch) && j <= i+pairWindow; j++ {
		if pairBytes(&batch[j]) == w && independentOf(&batch[j], batch[i:j]) {
			return j
		}
	}
	return -1
}

// pairBytes is the weight bytes (codes, scales, biases) of a one-row qmv, else 0.
func pairBytes(l *Launch) int {
	p, ok := l.Params.(*QuantParams)
	if l.Kernel != KQMV || !ok || p.M != 1 {
		return 0
	}
	return len(l.Args[1].Data) + len(l.Args[2].Data) + len(l.Args[3].Data)
}

// independentOf reports whether b may run before every launch of before: b reads no
// output of theirs, and none of them reads or writes b's output.
func independentOf(b *Launch, before []Launch) bool {
	out := b.Out().Data
	for k := range before {
		l := &before[k]
		for a := 0; a < b.NArgs-1; a++ {
			if overlaps(b.Args[a].Data, l.Out().Data) {
				return false
			}
		}
		for a := 0; a < l.NArgs; a++ {
			if overlaps(l.Args[a].Data, out) {
				return false
			}
		}
	}
	return true
}

// overlaps reports whether two byte slices share memory.
func overlaps(x, y []byte) bool {
	if len(x) == 0 || len(y) == 0 {
		return false
	}
	x0, y0 := uintptr(unsafe.Pointer(&x[0])), uintptr(unsafe.Pointer(&y[0]))
	return x0 < y0+uintptr(len(y)) && y0 < x0+uintptr(len(x))
}

// RunPair runs a and b at once: b on a's Helper if it takes it, a here, each on one
// core (their own offers find the Helper's slot taken). Without a Helper, or with its
// slot in use, both run here in turn. It returns when both have run; a panic of b on
// the helper (a memory fault on a mapped weight) is raised here once both are done.
func RunPair(a, b *Launch) {
	h := a.Helper
	if !h.post(helpJob{fn: func() { b.Kernel.CPU(b) }}) {
		a.Kernel.CPU(a)
		b.Kernel.CPU(b)
		return
	}
	defer h.join() // b is done, on either goroutine, before a's panic (if any) goes on
	a.Kernel.CPU(a)
}
