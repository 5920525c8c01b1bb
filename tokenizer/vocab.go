package tokenizer

import (
	"hash/maphash"
	"unsafe"
)

// vocabEntry is one token of model.vocab as the file lists it.
type vocabEntry struct {
	tok string // byte-level spelling
	id  int32
}

// vocabTable maps a token's byte-level string to its id: open addressing over one
// uint64 a slot (a 31-bit hash tag and the id), 2 MB for Qwen3's 151,643 tokens,
// where Go's map of strings spreads over 5 MB and cost the loader half its time in
// cache misses. A tag match is confirmed against the token's string.
type vocabTable struct {
	slots []uint64 // 0: free; else tag<<32 | id
	toks  []string // id -> string
	seed  maphash.Seed
}

func newVocabTable(entries []vocabEntry, top int32) *vocabTable {
	size := 1
	for size < len(entries)+len(entries)/2+2 {
		size *= 2
	}
	v := &vocabTable{slots: make([]uint64, size), toks: make([]string, top+1), seed: maphash.MakeSeed()}
	for _, e := range entries {
		v.put(e.tok, e.id)
	}
	return v
}

const low32 = 0xFFFFFFFF

// tag is s's hash tag (never 0, so a used slot is never 0) and its first slot.
func (v *vocabTable) tag(s string) (tag, at uint64) {
	h := maphash.String(v.seed, s)
	return uint64(uint32(h>>32)|1) << 32, h & uint64(len(v.slots)-1)
}

// put sets s's id (the last of a repeated key wins, as encoding/json's does).
func (v *vocabTable) put(s string, id int32) {
	tag, i := v.tag(s)
	mask := uint64(len(v.slots) - 1)
	for ; ; i = (i + 1) & mask {
		sl := &v.slots[i]
		if *sl == 0 || (*sl&^low32 == tag && v.toks[uint32(*sl)] == s) {
			*sl = tag | uint64(uint32(id))
			v.toks[id] = s
			return
		}
	}
}

// get returns s's id.
func (v *vocabTable) get(s string) (int32, bool) {
	tag, i := v.tag(s)
	mask := uint64(len(v.slots) - 1)
	for ; ; i = (i + 1) & mask {
		sl := v.slots[i]
		if sl == 0 {
			return 0, false
		}
		if sl&^low32 == tag && v.toks[uint32(sl)] == s {
			return int32(uint32(sl)), true
		}
	}
}

// unsafeString views b as a string for a lookup (b is not changed while it is used).
func unsafeString(b []byte) string { return unsafe.String(unsafe.SliceData(b), len(b)) }
