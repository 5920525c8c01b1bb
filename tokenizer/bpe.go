package tokenizer

import "container/heap"

// merge is one BPE merge rule: the pair's rank (lower merges first) and the token it
// makes.
type merge struct {
	rank int32
	id   int32
}

// pairKey keys a merge by its two tokens.
func pairKey(a, b int32) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// heapCutoff is the piece length (bytes) from which bpe merges through a priority
// queue; shorter pieces scan for the best pair, which is faster for them.
const heapCutoff = 48

// bpe appends the ids of one pre-tokenized piece (raw bytes) to dst: every byte its
// token, then the lowest-ranked adjacent pair merged, the leftmost first among
// equals, until no pair has a merge.
func (t *Tokenizer) bpe(dst []int32, piece string) []int32 {
	if t.ignoreMerges {
		if id, ok := t.vocab[byteLevel(piece)]; ok {
			return append(dst, id)
		}
	}
	if len(piece) >= heapCutoff {
		return t.bpeHeap(dst, piece)
	}
	var buf [heapCutoff]int32
	syms := buf[:len(piece)]
	for i := 0; i < len(piece); i++ {
		syms[i] = t.byteID[piece[i]]
	}
	for len(syms) > 1 {
		best, at := merge{rank: -1}, -1
		for i := 0; i+1 < len(syms); i++ {
			if m, ok := t.merges[pairKey(syms[i], syms[i+1])]; ok && (at < 0 || m.rank < best.rank) {
				best, at = m, i
			}
		}
		if at < 0 {
			break
		}
		syms[at] = best.id
		syms = append(syms[:at+1], syms[at+2:]...)
	}
	return append(dst, syms...)
}

// candidate is a pair that may merge: symbols at left and its right neighbour.
type candidate struct {
	rank  int32
	left  int32 // the left symbol's index
	id    int32 // the token the pair makes
	right int32 // the right symbol's token when queued (stale if it changed)
	leftT int32 // the left symbol's token when queued
}

type candidates []candidate

func (c candidates) Len() int { return len(c) }
func (c candidates) Less(i, j int) bool {
	if c[i].rank != c[j].rank {
		return c[i].rank < c[j].rank
	}
	return c[i].left < c[j].left
}
func (c candidates) Swap(i, j int) { c[i], c[j] = c[j], c[i] }
func (c *candidates) Push(x any)   { *c = append(*c, x.(candidate)) }
func (c *candidates) Pop() any {
	old := *c
	x := old[len(old)-1]
	*c = old[:len(old)-1]
	return x
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
	q := make(candidates, 0, n)
	push := func(l int32) {
		r := next[l]
		if r < 0 {
			return
		}
		if m, ok := t.merges[pairKey(tok[l], tok[r])]; ok {
			heap.Push(&q, candidate{rank: m.rank, left: l, id: m.id, right: tok[r], leftT: tok[l]})
		}
	}
	for i := 0; i+1 < n; i++ {
		push(int32(i))
	}
	for q.Len() > 0 {
		c := heap.Pop(&q).(candidate)
		l := c.left
		r := next[l]
		// Stale: the left symbol was merged away or changed, or its neighbour did.
		if tok[l] != c.leftT || r < 0 || tok[r] != c.right || tok[l] < 0 {
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
