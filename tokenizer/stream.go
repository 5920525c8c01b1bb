package tokenizer

// Stream decodes ids one at a time into text, for printing tokens as they are
// generated. A token may end inside a UTF-8 sequence (a byte-level BPE splits
// characters freely): the bytes of an incomplete sequence are held until the next
// token completes them, so the pieces Push returns, then Flush's, concatenate to
// exactly Decode of all the ids.
type Stream struct {
	t       *Tokenizer
	pending []byte // bytes not yet returned: a possibly incomplete sequence
	n       int    // ids pushed
}

// NewStream returns a stream decoder.
func (t *Tokenizer) NewStream() *Stream { return &Stream{t: t} }

// Push adds one id and returns the text it completes (possibly empty). An id the
// tokenizer does not know is an *UnknownIDError.
func (s *Stream) Push(id int32) (string, error) {
	b, err := s.t.idBytes(id)
	if err != nil {
		return "", &UnknownIDError{Index: s.n, ID: id, VocabSize: len(s.t.bytes)}
	}
	s.n++
	s.pending = append(s.pending, b...)
	cut := len(s.pending) - incompleteTail(s.pending)
	if cut == 0 {
		return "", nil
	}
	out := string(appendLossy(nil, s.pending[:cut]))
	s.pending = append(s.pending[:0], s.pending[cut:]...)
	return out, nil
}

// Flush returns the held bytes (an incomplete sequence at the end becomes U+FFFD).
func (s *Stream) Flush() string {
	out := string(appendLossy(nil, s.pending))
	s.pending = s.pending[:0]
	return out
}

// incompleteTail returns the length of the longest suffix of b (at most 3 bytes)
// that begins a well-formed UTF-8 sequence without completing it, or 0.
func incompleteTail(b []byte) int {
	for k := 1; k <= 3 && k <= len(b); k++ {
		c := b[len(b)-k]
		if c&0xC0 == 0x80 {
			continue // a continuation byte: the sequence starts further back
		}
		if validPrefix(b[len(b)-k:]) == k {
			return k
		}
		return 0
	}
	return 0
}
