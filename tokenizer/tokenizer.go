package tokenizer

import (
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// Tokenizer encodes text to token ids and decodes ids to text. It is safe for
// concurrent use.
type Tokenizer struct {
	vocab        *vocabTable      // byte-level token string -> id (the BPE model's)
	merges       *mergeTable      // pair -> rank and result
	byteID       [256]int32       // each byte's own token
	bytes        [][]byte         // id -> the bytes it decodes to (nil: no such id)
	added        []AddedToken     // matched before anything else, longest first
	addedFirst   [256]bool        // bytes that start an added token
	addedByID    map[int32]string // id -> content
	nfc          bool             // the normalizer is NFC
	marks        bool             // Qwen3.5's split pattern
	ignoreMerges bool             // a piece that is a whole token is not merged

	mu         sync.Mutex
	cache      map[string][]int32 // piece -> ids
	cacheBytes int                // the cached pieces' bytes
}

// AddedToken is a token matched verbatim in the text before splitting (the special
// tokens such as <|im_start|>, and others such as <think>).
type AddedToken struct {
	ID      int32
	Content string
	Special bool
}

// The piece cache's bounds: at either it starts over.
const (
	cacheMax      = 1 << 16 // pieces
	cacheBytesMax = 8 << 20 // bytes of pieces
	cachePieceMax = 1024    // longer pieces are not cached
)

// VocabSize is one more than the largest id the tokenizer can produce or decode.
func (t *Tokenizer) VocabSize() int { return len(t.bytes) }

// Added returns the added tokens (special or not), longest first.
func (t *Tokenizer) Added() []AddedToken { return slices.Clone(t.added) }

// TokenID returns the id of an added token or vocabulary token given by its content
// (a vocabulary token in its byte-level spelling).
func (t *Tokenizer) TokenID(content string) (int32, bool) {
	for _, a := range t.added {
		if a.Content == content {
			return a.ID, true
		}
	}
	return t.vocab.get(content)
}

// Encode returns the ids of text. Added tokens in the text are matched as such
// (leftmost, longest), the rest is normalized and split. Invalid UTF-8 is replaced
// first, each byte that starts no valid sequence by U+FFFD.
func (t *Tokenizer) Encode(text string) []int32 {
	text = ValidUTF8(text)
	ids := make([]int32, 0, len(text)/3+1)
	for len(text) > 0 {
		at, tok := t.findAdded(text)
		if at < 0 {
			return t.encodeSegment(ids, text)
		}
		ids = t.encodeSegment(ids, text[:at])
		ids = append(ids, tok.ID)
		text = text[at+len(tok.Content):]
	}
	return ids
}

// findAdded returns the position of the leftmost added token in s and the longest
// one there, or -1.
func (t *Tokenizer) findAdded(s string) (int, AddedToken) {
	if len(t.added) == 0 {
		return -1, AddedToken{}
	}
	for i := 0; i < len(s); i++ {
		if !t.addedFirst[s[i]] {
			continue
		}
		for _, a := range t.added { // longest first
			if strings.HasPrefix(s[i:], a.Content) {
				return i, a
			}
		}
	}
	return -1, AddedToken{}
}

// encodeSegment appends the ids of text that holds no added token.
func (t *Tokenizer) encodeSegment(ids []int32, s string) []int32 {
	if s == "" {
		return ids
	}
	if t.nfc {
		s = norm.NFC.String(s)
	}
	p := splitter{s: s, marks: t.marks}
	for i := 0; i < len(s); {
		end := p.next(i)
		ids = t.encodePiece(ids, s[i:end])
		i = end
	}
	return ids
}

// encodePiece appends the ids of one pre-tokenized piece, through the cache.
func (t *Tokenizer) encodePiece(ids []int32, piece string) []int32 {
	if len(piece) == 1 && !t.ignoreMerges {
		return append(ids, t.byteID[piece[0]])
	}
	if len(piece) > cachePieceMax {
		return t.bpe(ids, piece)
	}
	t.mu.Lock()
	got, ok := t.cache[piece]
	t.mu.Unlock()
	if ok {
		return append(ids, got...)
	}
	n := len(ids)
	ids = t.bpe(ids, piece)
	t.mu.Lock()
	if len(t.cache) >= cacheMax || t.cacheBytes+len(piece) > cacheBytesMax {
		clear(t.cache)
		t.cacheBytes = 0
	}
	t.cacheBytes += len(piece)
	t.cache[strings.Clone(piece)] = slices.Clone(ids[n:])
	t.mu.Unlock()
	return ids
}

// Decode returns the text of ids: added tokens as their content, the others as the
// bytes they stand for, made valid UTF-8 (an ill-formed byte sequence becomes
// U+FFFD). An id the tokenizer does not know is an *UnknownIDError.
func (t *Tokenizer) Decode(ids []int32) (string, error) {
	var b []byte
	for i, id := range ids {
		tb, err := t.idBytes(id)
		if err != nil {
			return "", &UnknownIDError{Index: i, ID: id, VocabSize: len(t.bytes)}
		}
		b = append(b, tb...)
	}
	return string(appendLossy(nil, b)), nil
}

// idBytes returns the bytes id decodes to.
func (t *Tokenizer) idBytes(id int32) ([]byte, error) {
	if id < 0 || int(id) >= len(t.bytes) || t.bytes[id] == nil {
		return nil, errUnknownID
	}
	return t.bytes[id], nil
}

// ValidUTF8 returns s with each byte that starts no valid UTF-8 sequence replaced by
// U+FFFD (s itself when it is valid).
func ValidUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for _, r := range s { // an invalid byte ranges as RuneError, one byte at a time
		b.WriteRune(r)
	}
	return b.String()
}

// InvalidBytes counts the bytes of s that ValidUTF8 replaces.
func InvalidBytes(s string) int {
	n := 0
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			n++
		}
		i += size
	}
	return n
}
