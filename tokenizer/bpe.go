package tokenizer

// merge is one BPE merge rule: the pair's rank (lower merges first) and the token it
// makes.
type merge struct {
	rank int32
	id   int32
}

// pairKey keys a merge by its two tokens.
func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// heapCutoff is the piece length (bytes) from which bpe merges through a priority
// queue; shorter pieces scan an array of pair ranks, which is faster for them.
const heapCutoff = 128

// noMerge is the rank of a pair without a merge.
const noMerge = int32(1<<31 - 1)

// bpe appends the ids of one pre-tokenized piece (raw bytes) to dst: every byte its
// token, then the lowest-ranked adjacent pair merged, the leftmost first among
// equals, until no pair has a merge.
func (t *Tokenizer) bpe(dst []int32, piece string) []int32 {
	if t.ignoreMerges {
		if id, ok := t.vocab.get(byteLevel(piece)); ok {
			return append(dst, id)
		}
	}
	n := len(piece)
	if n >= heapCutoff {
		return t.bpeHeap(dst, piece)
	}
	// Stack scratch, small for the common short piece (Go zeroes it each call).
	if n <= 24 {
		var syms, ranks, made [24]int32
		return t.bpeScan(dst, piece, syms[:n], ranks[:n], made[:n])
	}
	var syms, ranks, made [heapCutoff]int32
	return t.bpeScan(dst, piece, syms[:n], ranks[:n], made[:n])
}

// bpeScan is bpe over scratch of the piece's length: syms[i] and syms[i+1] merge
// at rank ranks[i] into made[i].
func (t *Tokenizer) bpeScan(dst []int32, piece string, syms, ranks, made []int32) []int32 {
	n := len(piece)
	for i := 0; i < n; i++ {
		syms[i] = t.byteID[piece[i]]
	}
	pair := func(i int) {
		if m, ok := t.merges.get(pairKey(syms[i], syms[i+1])); ok {
			ranks[i], made[i] = m.rank, m.id
		} else {
			ranks[i] = noMerge
		}
	}
	for i := 0; i+1 < n; i++ {
		pair(i)
	}
	for n > 1 {
		at, best := -1, noMerge
		for i, r := range ranks[:n-1] {
			if r < best {
				at, best = i, r
			}
		}
		if at < 0 {
			break
		}
		syms[at] = made[at]
		copy(syms[at+1:n], syms[at+2:n])
		copy(ranks[at:n-1], ranks[at+1:n-1])
		copy(made[at:n-1], made[at+1:n-1])
		n--
		if at > 0 {
			pair(at - 1)
		}
		if at+1 < n {
			pair(at)
		}
	}
	return append(dst, syms[:n]...)
}

// candidate is a pair that may merge: the symbol at left and its right neighbour.
type candidate struct {
	rank  int32
	left  int32 // the left symbol's index
	id    int32 // the token the pair makes
	right int32 // the right symbol's token when queued (stale if it changed)
	leftT int32 // the left symbol's token when queued
}

// before orders candidates: lower rank first, then the leftmost.
func (c candidate) before(d candidate) bool {
	return c.rank < d.rank || (c.rank == d.rank && c.left < d.left)
}

// queue is a binary min-heap of candidates (typed, so a push allocates nothing).
type queue []candidate

func (q *queue) push(c candidate) {
	*q = append(*q, c)
	h := *q
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !h[i].before(h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (q *queue) pop() candidate {
	h := *q
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h = h[:last]
	for i := 0; ; {
		l, small := 2*i+1, i
		if l < len(h) && h[l].before(h[small]) {
			small = l
		}
		if r := l + 1; r < len(h) && h[r].before(h[small]) {
			small = r
		}
		if small == i {
			break
		}
		h[i], h[small] = h[small], h[i]
		i = small
	}
	*q = h
	return top
}

// bpeHeap is bpe for long pieces (a run of spaces, a line of dashes): O(n log n)
// through a queue of candidate pairs ordered by rank, then position, over a linked
// list of symbols.
func (t *Tokenizer) bpeHeap(dst []int32, piece string) []int32 {
	n := len(piece)
	tok := make([]int32, n)
	prev := make([]int32, n)
	next := make([]int32, n)
	for i := 0; i < n; i++ {
		tok[i] = t.byteID[piece[i]]
		prev[i], next[i] = int32(i-1), int32(i+1)
	}
	next[n-1] = -1
	q := make(queue, 0, n)
	push := func(l int32) {
		r := next[l]
		if r < 0 {
			return
		}
		if m, ok := t.merges.get(pairKey(tok[l], tok[r])); ok {
			q.push(candidate{rank: m.rank, left: l, id: m.id, right: tok[r], leftT: tok[l]})
		}
	}
	for i := 0; i+1 < n; i++ {
		push(int32(i))
	}
	for len(q) > 0 {
		c := q.pop()
		l := c.left
		r := next[l]
		// Stale: the left symbol changed (it merged, so its token grew), or its right
		// neighbour did. A symbol's right neighbour changes only when it merges.
		if tok[l] != c.leftT || r < 0 || tok[r] != c.right {
			continue
		}
		tok[l] = c.id
		tok[r] = -1 // removed
		next[l] = next[r]
		if next[r] >= 0 {
			prev[next[r]] = l
		}
		if p := prev[l]; p >= 0 {
			push(p)
		}
		push(l)
	}
	for i := int32(0); i >= 0; i = next[i] {
		dst = append(dst, tok[i])
	}
	return dst
}

// mergeTable maps a pair (pairKey) to its merge: open addressing with linear
// probing, key and value in one slot, so a lookup touches one cache line (Go's map
// took a quarter of the encoding time).
type mergeTable struct {
	slots []mergeSlot
	shift uint
	n     int
}

type mergeSlot struct {
	key uint64 // emptyKey when free
	m   merge
}

// emptyKey is no pair: ids are below 2^24, so no key has all bits set.
const emptyKey = ^uint64(0)

func newMergeTable(n int) *mergeTable {
	size, shift := 1, uint(64)
	for size < n+n/2+2 { // load at most 2/3: 4 MB for Qwen3's merges
		size *= 2
		shift--
	}
	t := &mergeTable{slots: make([]mergeSlot, size), shift: shift}
	for i := range t.slots {
		t.slots[i].key = emptyKey
	}
	return t
}

func (t *mergeTable) index(k uint64) uint64 { return (k * 0x9E3779B97F4A7C15) >> t.shift }

// get returns the merge of pair k.
func (t *mergeTable) get(k uint64) (merge, bool) {
	mask := uint64(len(t.slots) - 1)
	for i := t.index(k); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.key == k {
			return s.m, true
		}
		if s.key == emptyKey {
			return merge{}, false
		}
	}
}

// add stores m for pair k unless k is there already (the first rank holds); the
// table is sized for every pair up front.
func (t *mergeTable) add(k uint64, m merge) {
	mask := uint64(len(t.slots) - 1)
	for i := t.index(k); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.key == k {
			return
		}
		if s.key == emptyKey {
			s.key, s.m = k, m
			t.n++
			return
		}
	}
}
