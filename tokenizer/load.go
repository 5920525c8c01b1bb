package tokenizer

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// MaxFileBytes bounds a tokenizer.json (Qwen3's is 11 MB, Qwen3.5's about 20 MB).
const MaxFileBytes = 256 << 20

// maxID bounds token ids, so a hostile file cannot make the id table huge.
const maxID = 1 << 24

// FormatError is a tokenizer.json this package cannot use: not JSON, not a tokenizer,
// or a kind of tokenizer it does not implement. Field names the offending part.
type FormatError struct {
	Path  string
	Field string
	Msg   string
}

func (e *FormatError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s: %s", e.Path, e.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", e.Path, e.Field, e.Msg)
}

// UnknownIDError is an id that Decode cannot decode.
type UnknownIDError struct {
	Index     int // its position in the input
	ID        int32
	VocabSize int
}

func (e *UnknownIDError) Error() string {
	return fmt.Sprintf("tokenizer: id %d (at %d) is not a token (vocabulary size %d)", e.ID, e.Index, e.VocabSize)
}

var errUnknownID = errors.New("unknown id")

// Load reads a tokenizer.json: path is the file (gzip-compressed if it ends in .gz)
// or a directory holding tokenizer.json.
func Load(path string) (*Tokenizer, error) {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		path = filepath.Join(path, "tokenizer.json")
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %w", err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		z, err := gzip.NewReader(f)
		if err != nil {
			return nil, &FormatError{Path: path, Msg: fmt.Sprintf("not gzip: %v", err)}
		}
		defer z.Close()
		r = z
	}
	data, err := io.ReadAll(io.LimitReader(r, MaxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("tokenizer: %s: %w", path, err)
	}
	if len(data) > MaxFileBytes {
		return nil, &FormatError{Path: path, Msg: fmt.Sprintf("larger than %d MB: not a tokenizer.json", MaxFileBytes>>20)}
	}
	return Parse(data, path)
}

// fileJSON is the part of tokenizer.json this package reads.
type fileJSON struct {
	AddedTokens []struct {
		ID         *int32 `json:"id"`
		Content    string `json:"content"`
		SingleWord bool   `json:"single_word"`
		LStrip     bool   `json:"lstrip"`
		RStrip     bool   `json:"rstrip"`
		Normalized bool   `json:"normalized"`
		Special    bool   `json:"special"`
	} `json:"added_tokens"`
	Normalizer    *component `json:"normalizer"`
	PreTokenizer  *component `json:"pre_tokenizer"`
	Decoder       *component `json:"decoder"`
	Model         *modelJSON `json:"model"`
	PostProcessor *component `json:"post_processor"`
}

// component is a normalizer, pre-tokenizer or decoder, possibly a Sequence of them.
type component struct {
	Type          string       `json:"type"`
	Normalizers   []*component `json:"normalizers"`
	PreTokenizers []*component `json:"pretokenizers"`
	Pattern       *struct {
		Regex  *string `json:"Regex"`
		String *string `json:"String"`
	} `json:"pattern"`
	Behavior       string `json:"behavior"`
	Invert         bool   `json:"invert"`
	AddPrefixSpace bool   `json:"add_prefix_space"`
	UseRegex       *bool  `json:"use_regex"`
}

type modelJSON struct {
	Type                    string   `json:"type"`
	Dropout                 *float64 `json:"dropout"`
	UnkToken                *string  `json:"unk_token"`
	ContinuingSubwordPrefix *string  `json:"continuing_subword_prefix"`
	EndOfWordSuffix         *string  `json:"end_of_word_suffix"`
	ByteFallback            bool     `json:"byte_fallback"`
	IgnoreMerges            bool     `json:"ignore_merges"`
}

// Parse builds a tokenizer from tokenizer.json's bytes; name labels errors.
func Parse(data []byte, name string) (*Tokenizer, error) {
	bad := func(field, f string, a ...any) error {
		return &FormatError{Path: name, Field: field, Msg: fmt.Sprintf(f, a...)}
	}
	rf, err := scanFile(data)
	if err != nil {
		return nil, bad("", "not a tokenizer.json: %v", err)
	}
	var fj fileJSON
	rest, err := json.Marshal(rf.rest)
	if err == nil {
		err = json.Unmarshal(rest, &fj)
	}
	if err != nil {
		return nil, bad("", "not a tokenizer.json: %v", err)
	}
	m := fj.Model
	if m != nil {
		if model, err := json.Marshal(rf.model); err != nil || json.Unmarshal(model, m) != nil {
			return nil, bad("model", "not a tokenizer model")
		}
	}
	switch {
	case m == nil:
		return nil, bad("model", "missing: not a tokenizer.json")
	case m.Type != "BPE":
		return nil, bad("model.type", "%q: only BPE is implemented", m.Type)
	case m.Dropout != nil && *m.Dropout != 0:
		return nil, bad("model.dropout", "BPE dropout is not implemented")
	case m.ByteFallback:
		return nil, bad("model.byte_fallback", "not implemented (byte-level BPE needs none)")
	case m.ContinuingSubwordPrefix != nil && *m.ContinuingSubwordPrefix != "",
		m.EndOfWordSuffix != nil && *m.EndOfWordSuffix != "":
		return nil, bad("model", "subword prefixes and suffixes are not implemented")
	case len(rf.vocab) == 0:
		return nil, bad("model.vocab", "missing or empty")
	case !rf.hasMrg:
		return nil, bad("model.merges", "missing")
	}
	t := &Tokenizer{ignoreMerges: m.IgnoreMerges, addedByID: map[int32]string{}, cache: map[string][]int32{}}
	if err := t.checkPipeline(&fj, bad); err != nil {
		return nil, err
	}
	top := int32(-1)
	arena := 0 // bytes of every token's decoding
	for _, e := range rf.vocab {
		if e.id < 0 || e.id >= maxID {
			return nil, bad("model.vocab", "token %q has id %d, outside [0, %d)", e.tok, e.id, maxID)
		}
		top = max(top, e.id)
		arena += len(e.tok)
	}
	for i, a := range fj.AddedTokens {
		switch {
		case a.ID == nil || *a.ID < 0 || *a.ID >= maxID:
			return nil, bad(fmt.Sprintf("added_tokens[%d]", i), "needs an id in [0, %d)", maxID)
		case a.Content == "":
			return nil, bad(fmt.Sprintf("added_tokens[%d]", i), "empty content")
		case a.SingleWord || a.LStrip || a.RStrip:
			return nil, bad(fmt.Sprintf("added_tokens[%d]", i), "%q: single_word, lstrip and rstrip are not implemented", a.Content)
		}
		top = max(top, *a.ID)
		arena += len(a.Content)
		t.added = append(t.added, AddedToken{ID: *a.ID, Content: a.Content, Special: a.Special})
	}
	// Every token's bytes in one allocation (sized up front: a token decodes to at
	// most its string's length, so the slices never move).
	buf := make([]byte, 0, arena)
	t.bytes = make([][]byte, top+1)
	for _, e := range rf.vocab {
		if t.bytes[e.id] != nil {
			return nil, bad("model.vocab", "id %d is given to two tokens", e.id)
		}
		start := len(buf)
		buf = appendTokenBytes(buf, e.tok)
		t.bytes[e.id] = buf[start:len(buf):len(buf)]
	}
	t.vocab = newVocabTable(rf.vocab, top)
	for _, a := range t.added {
		start := len(buf)
		buf = append(buf, a.Content...)
		t.bytes[a.ID] = buf[start:len(buf):len(buf)]
		t.addedByID[a.ID] = a.Content
		t.addedFirst[a.Content[0]] = true
	}
	// Longest first, so the longest added token at a position wins.
	slices.SortStableFunc(t.added, func(a, b AddedToken) int { return len(b.Content) - len(a.Content) })
	for b := 0; b < 256; b++ {
		id, ok := t.vocab.get(string(byteRune[b]))
		if !ok {
			return nil, bad("model.vocab", "byte 0x%02X has no token (%q): not a byte-level vocabulary", b, string(byteRune[b]))
		}
		t.byteID[b] = id
	}
	if err := t.buildMerges(rf.merges, bad); err != nil {
		return nil, err
	}
	return t, nil
}

// checkPipeline accepts the normalizer, pre-tokenizer and decoder of the Qwen
// tokenizers (and refuses, by name, what it does not implement).
func (t *Tokenizer) checkPipeline(fj *fileJSON, bad func(string, string, ...any) error) error {
	switch n := fj.Normalizer; {
	case n == nil:
	case n.Type == "NFC":
		t.nfc = true
	case n.Type == "Sequence" && len(n.Normalizers) == 1 && n.Normalizers[0] != nil && n.Normalizers[0].Type == "NFC":
		t.nfc = true
	case n.Type == "Sequence" && len(n.Normalizers) == 0:
	default:
		return bad("normalizer", "%q: only NFC is implemented", n.Type)
	}
	p := fj.PreTokenizer
	if p == nil || p.Type != "Sequence" || len(p.PreTokenizers) != 2 || p.PreTokenizers[0] == nil || p.PreTokenizers[1] == nil {
		return bad("pre_tokenizer", "only a Sequence of Split (the Qwen regex) and ByteLevel is implemented")
	}
	split, bl := p.PreTokenizers[0], p.PreTokenizers[1]
	if split.Type != "Split" || split.Pattern == nil || split.Pattern.Regex == nil || split.Behavior != "Isolated" || split.Invert {
		return bad("pre_tokenizer.pretokenizers[0]", "only a Split by regex, Isolated, not inverted, is implemented")
	}
	switch *split.Pattern.Regex {
	case qwen2Pattern:
	case qwen35Pattern:
		t.marks = true
	default:
		return bad("pre_tokenizer.pretokenizers[0].pattern", "regex %q is not one this package implements (Qwen2's or Qwen3.5's)", *split.Pattern.Regex)
	}
	if bl.Type != "ByteLevel" || bl.AddPrefixSpace || (bl.UseRegex != nil && *bl.UseRegex) {
		return bad("pre_tokenizer.pretokenizers[1]", "only ByteLevel without a prefix space or its own regex is implemented")
	}
	if d := fj.Decoder; d == nil || d.Type != "ByteLevel" {
		return bad("decoder", "only ByteLevel is implemented")
	}
	return nil
}

// buildMerges resolves the merges to ids: each pair's two tokens and their
// concatenation must be in the vocabulary.
func (t *Tokenizer) buildMerges(pairs [][2]string, bad func(string, string, ...any) error) error {
	t.merges = newMergeTable(len(pairs))
	var cat []byte
	for i, pair := range pairs {
		a, okA := t.vocab.get(pair[0])
		b, okB := t.vocab.get(pair[1])
		if !okA || !okB {
			unknown := pair[0]
			if okA {
				unknown = pair[1]
			}
			return bad(fmt.Sprintf("model.merges[%d]", i), "%q names an unknown token %q", pair[0]+" "+pair[1], unknown)
		}
		cat = append(append(cat[:0], pair[0]...), pair[1]...)
		id, ok := t.vocab.get(unsafeString(cat))
		if !ok {
			return bad(fmt.Sprintf("model.merges[%d]", i), "the merge of %q and %q, %q, is not in the vocabulary", pair[0], pair[1], pair[0]+pair[1])
		}
		t.merges.add(pairKey(a, b), merge{rank: int32(i), id: id}) // a repeated pair keeps its first rank
	}
	return nil
}
