package tokenizer

import (
	"encoding/json"
	"errors"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tinyJSON is a byte-level tokenizer.json with the 256 byte tokens (ids 0..255),
// the merges given (each "a b" in the alphabet) whose results get the next ids, and
// one added token, edited by edit before it is encoded.
func tinyJSON(t *testing.T, merges []string, edit func(m map[string]any)) []byte {
	t.Helper()
	if merges == nil {
		merges = []string{}
	}
	vocab := map[string]any{}
	for b := 0; b < 256; b++ {
		vocab[string(byteRune[b])] = b
	}
	next := 256
	for _, m := range merges {
		a, b, _ := strings.Cut(m, " ")
		if _, ok := vocab[a+b]; !ok {
			vocab[a+b] = next
			next++
		}
	}
	doc := map[string]any{
		"added_tokens": []any{map[string]any{"id": next, "content": "<|end|>", "special": true}},
		"normalizer":   map[string]any{"type": "NFC"},
		"pre_tokenizer": map[string]any{"type": "Sequence", "pretokenizers": []any{
			map[string]any{"type": "Split", "pattern": map[string]any{"Regex": qwen2Pattern}, "behavior": "Isolated", "invert": false},
			map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": false},
		}},
		"decoder": map[string]any{"type": "ByteLevel"},
		"model":   map[string]any{"type": "BPE", "vocab": vocab, "merges": merges},
	}
	if edit != nil {
		edit(doc)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestTinyTokenizer(t *testing.T) {
	tok, err := Parse(tinyJSON(t, []string{"a b", "ab c", "Ġ a"}, nil), "tiny")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tok.Encode("abc ab<|end|>"), []int32{257, 32, 256, 259}; !slices.Equal(got, want) {
		t.Errorf("Encode = %v, want %v", got, want)
	}
	if tok.VocabSize() != 260 {
		t.Errorf("VocabSize = %d, want 260", tok.VocabSize())
	}
	// Merges given as pairs read the same as strings.
	pairs, err := Parse(tinyJSON(t, nil, func(m map[string]any) {
		m["model"].(map[string]any)["merges"] = [][2]string{{"a", "b"}}
		m["model"].(map[string]any)["vocab"].(map[string]any)["ab"] = 256
	}), "pairs")
	if err != nil {
		t.Fatal(err)
	}
	if got := pairs.Encode("abab"); !slices.Equal(got, []int32{256, 256}) {
		t.Errorf("pairs: Encode(abab) = %v", got)
	}
}

// TestHostileFiles: a file that is not a tokenizer.json, or one of a kind this
// package does not implement, is a *FormatError naming the part, never a panic.
func TestHostileFiles(t *testing.T) {
	model := func(f func(m map[string]any)) func(map[string]any) {
		return func(d map[string]any) { f(d["model"].(map[string]any)) }
	}
	cases := []struct {
		name string
		data []byte
		want string
	}{
		{"not json", []byte("PK\x03\x04 a zip file"), "tiny: not a tokenizer.json: not a JSON object"},
		{"json array", []byte("[1,2,3]"), "tiny: not a tokenizer.json: not a JSON object"},
		{"truncated", tinyJSON(t, nil, nil)[:2000], "tiny: not a tokenizer.json: invalid JSON at byte 2000: ..."},
		{"deep", []byte(strings.Repeat("[", 100000)), "tiny: not a tokenizer.json: not a JSON object"},
		{"deep inside", []byte(`{"x":` + strings.Repeat("[", 100000)), "tiny: not a tokenizer.json: invalid JSON at byte 70: nested deeper than 64"},
		{"control character", []byte("{\"a\x01\": 1}"), "tiny: not a tokenizer.json: invalid JSON at byte 3: control character 0x01 in a string"},
		{"trailing data", []byte(`{} {}`), "tiny: not a tokenizer.json: invalid JSON at byte 3: data after the top-level object"},
		{"model not an object", []byte(`{"model": 7}`), "tiny: not a tokenizer.json: json: cannot unmarshal number into Go struct field fileJSON.model of type tokenizer.modelJSON"},
		{"empty object", []byte("{}"), "tiny: model: missing: not a tokenizer.json"},
		{"config.json", []byte(`{"model_type":"qwen3","vocab_size":151936}`), "tiny: model: missing: not a tokenizer.json"},
		{"unknown token in merge", tinyJSON(t, []string{"a zz"}, nil), `tiny: model.merges[0]: "a zz" names an unknown token "zz"`},
		{"merge result missing", tinyJSON(t, []string{"a b"}, model(func(m map[string]any) { delete(m["vocab"].(map[string]any), "ab") })),
			`tiny: model.merges[0]: the merge of "a" and "b", "ab", is not in the vocabulary`},
		{"merge not a pair", tinyJSON(t, nil, model(func(m map[string]any) { m["merges"] = []any{"ab"} })),
			`tiny: not a tokenizer.json: model.merges[0]: "ab" is not two tokens separated by a space`},
		{"merges not a list", tinyJSON(t, nil, model(func(m map[string]any) { m["merges"] = 7 })),
			"tiny: not a tokenizer.json: invalid JSON at byte 123: model.merges is not a list"},
		{"negative id", tinyJSON(t, nil, model(func(m map[string]any) { m["vocab"].(map[string]any)["x"] = -3 })),
			`tiny: model.vocab: token "x" has id -3, outside [0, 16777216)`},
		{"huge id", tinyJSON(t, nil, model(func(m map[string]any) { m["vocab"].(map[string]any)["x"] = 1 << 30 })),
			`tiny: model.vocab: token "x" has id 1073741824, outside [0, 16777216)`},
		{"duplicate id", tinyJSON(t, nil, model(func(m map[string]any) { m["vocab"].(map[string]any)["xy"] = 5 })),
			"tiny: model.vocab: id 5 is given to two tokens"},
		{"missing byte", tinyJSON(t, nil, model(func(m map[string]any) { delete(m["vocab"].(map[string]any), "Ġ") })),
			`tiny: model.vocab: byte 0x20 has no token ("Ġ"): not a byte-level vocabulary`},
		{"wordpiece", tinyJSON(t, nil, model(func(m map[string]any) { m["type"] = "WordPiece" })),
			`tiny: model.type: "WordPiece": only BPE is implemented`},
		{"other regex", tinyJSON(t, nil, func(d map[string]any) {
			d["pre_tokenizer"].(map[string]any)["pretokenizers"].([]any)[0].(map[string]any)["pattern"] = map[string]any{"Regex": `\w+`}
		}), `tiny: pre_tokenizer.pretokenizers[0].pattern: regex "\\w+" is not one this package implements (Qwen2's or Qwen3.5's)`},
		{"NFKC", tinyJSON(t, nil, func(d map[string]any) { d["normalizer"] = map[string]any{"type": "NFKC"} }),
			`tiny: normalizer: "NFKC": only NFC is implemented`},
		{"lstrip added token", tinyJSON(t, nil, func(d map[string]any) { d["added_tokens"].([]any)[0].(map[string]any)["lstrip"] = true }),
			`tiny: added_tokens[0]: "<|end|>": single_word, lstrip and rstrip are not implemented`},
	}
	for _, c := range cases {
		_, err := Parse(c.data, "tiny")
		var fe *FormatError
		if !errors.As(err, &fe) {
			t.Errorf("%s: err = %v, want a *FormatError", c.name, err)
			continue
		}
		if w, ok := strings.CutSuffix(c.want, "..."); ok && strings.HasPrefix(err.Error(), w) {
			continue
		}
		if err.Error() != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.name, err, c.want)
		}
	}
}

func TestLoadErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Load(dir); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("Load(dir without tokenizer.json) = %v, want not-exist", err)
	}
	gz := filepath.Join(dir, "x.json.gz")
	if err := os.WriteFile(gz, []byte("{\"not\": \"gzip\"}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(gz); err == nil || err.Error() != gz+": not gzip: gzip: invalid header" {
		t.Errorf("Load(not gzip) = %v", err)
	}
	// A directory holding tokenizer.json loads it.
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), tinyJSON(t, nil, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	if tok, err := Load(dir); err != nil || tok.VocabSize() != 257 {
		t.Errorf("Load(dir) = %v, %v", tok, err)
	}
}

// TestInvalidUTF8: each byte that starts no valid sequence encodes as U+FFFD.
func TestInvalidUTF8(t *testing.T) {
	tok := qwen3(t)
	in := "a\xffb\xe2\x82 c\xc0"
	if n := InvalidBytes(in); n != 4 {
		t.Errorf("InvalidBytes = %d, want 4", n)
	}
	want := "a\uFFFDb\uFFFD\uFFFD c\uFFFD"
	if got := ValidUTF8(in); got != want {
		t.Errorf("ValidUTF8 = %q, want %q", got, want)
	}
	if got, w := tok.Encode(in), tok.Encode(want); !slices.Equal(got, w) {
		t.Errorf("Encode(invalid) = %v, want %v", got, w)
	}
	if back, _ := tok.Decode(tok.Encode(in)); back != want {
		t.Errorf("round trip = %q, want %q", back, want)
	}
}

func TestDecodeUnknownID(t *testing.T) {
	tok := qwen3(t)
	_, err := tok.Decode([]int32{9707, 1 << 20})
	var ue *UnknownIDError
	if !errors.As(err, &ue) || ue.Index != 1 || err.Error() != "tokenizer: id 1048576 (at 1) is not a token (vocabulary size 151669)" {
		t.Errorf("Decode(unknown) = %v", err)
	}
	if _, err := tok.NewStream().Push(-1); !errors.As(err, &ue) {
		t.Errorf("Push(-1) = %v", err)
	}
}

// TestDigitsOneEach: every number rune is a piece of its own: an ASCII digit one
// id, any digit string the ids of its digits one by one.
func TestDigitsOneEach(t *testing.T) {
	tok := qwen3(t)
	for _, s := range []string{"0123456789", "9999999999999999", "٣٤٥", "１２３", "Ⅻ½"} {
		var want []int32
		for _, r := range s {
			want = append(want, tok.Encode(string(r))...)
		}
		if got := tok.Encode(s); !slices.Equal(got, want) {
			t.Errorf("Encode(%q) = %v, want its digits' %v", s, got, want)
		}
		if s[0] < 0x80 && len(want) != len(s) {
			t.Errorf("Encode(%q): %d ids, want one a digit", s, len(want))
		}
	}
}

// TestSplitPieces pins the scanner's pieces on the regex's subtle alternatives.
func TestSplitPieces(t *testing.T) {
	cases := []struct {
		in   string
		want []string
	}{
		{"  \n  hello", []string{"  \n", " ", " hello"}},
		{"a   b", []string{"a", "  ", " b"}},
		{"x   ", []string{"x", "   "}},
		{"x \t1", []string{"x", " ", "\t", "1"}},
		{"he's 'LL 'x", []string{"he", "'s", " '", "LL", " '", "x"}},
		{"a\r\n\r\n b", []string{"a", "\r\n\r\n", " b"}},
		{" !!\n\nz", []string{" !!\n\n", "z"}},
		{"\u00a0\u00a0x", []string{"\u00a0", "\u00a0x"}},
		{"12ab", []string{"1", "2", "ab"}},
		{"e\u0301\u0302", []string{"e", "\u0301\u0302"}},
	}
	for _, c := range cases {
		if got := pieces(c.in, false); !slices.Equal(got, c.want) {
			t.Errorf("split(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	// Qwen3.5's pattern keeps marks in letter runs.
	if got := pieces("e\u0301\u0302 x", true); !slices.Equal(got, []string{"e\u0301\u0302", " x"}) {
		t.Errorf("qwen3.5 split = %q", got)
	}
}

func pieces(s string, marks bool) []string {
	p := splitter{s: s, marks: marks}
	var out []string
	for i := 0; i < len(s); {
		end := p.next(i)
		out = append(out, s[i:end])
		i = end
	}
	return out
}

// TestBPEHeapMatchesScan: the queue path for long pieces merges exactly as the plain
// scan does (a naive statement of BPE here).
func TestBPEHeapMatchesScan(t *testing.T) {
	tok := qwen3(t)
	rng := rand.New(rand.NewSource(1))
	alphabet := []string{" ", "a", "b", "e", "th", "in", "-", "=", "\n", "的", "😀", "0"}
	for i := 0; i < 300; i++ {
		var sb strings.Builder
		for sb.Len() < 1+rng.Intn(200) {
			sb.WriteString(alphabet[rng.Intn(len(alphabet))])
		}
		piece := sb.String()
		if got, want := tok.bpeHeap(nil, piece), naiveBPE(tok, piece); !slices.Equal(got, want) {
			t.Fatalf("bpeHeap(%q) = %v, naive %v", piece, got, want)
		}
		if len(piece) < heapCutoff {
			if got, want := tok.bpe(nil, piece), naiveBPE(tok, piece); !slices.Equal(got, want) {
				t.Fatalf("bpe(%q) = %v, naive %v", piece, got, want)
			}
		}
	}
}

func naiveBPE(tok *Tokenizer, piece string) []int32 {
	var syms []int32
	for i := 0; i < len(piece); i++ {
		syms = append(syms, tok.byteID[piece[i]])
	}
	for {
		best, at := int32(-1), -1
		for i := 0; i+1 < len(syms); i++ {
			if m, ok := tok.merges.get(pairKey(syms[i], syms[i+1])); ok && (at < 0 || m.rank < best) {
				best, at = m.rank, i
			}
		}
		if at < 0 {
			return syms
		}
		m, _ := tok.merges.get(pairKey(syms[at], syms[at+1]))
		syms = slices.Replace(syms, at, at+2, m.id)
	}
}

// TestTruncatedRealFile: the real tokenizer.json cut anywhere is a clear error.
func TestTruncatedRealFile(t *testing.T) {
	raw := decompressed(t)
	for _, frac := range []float64{0.0001, 0.1, 0.5, 0.9, 0.999999} {
		n := int(float64(len(raw)) * frac)
		_, err := Parse(raw[:n], "cut")
		var fe *FormatError
		if !errors.As(err, &fe) || !strings.HasPrefix(err.Error(), "cut: not a tokenizer.json: invalid JSON at byte ") {
			t.Errorf("cut at %d of %d: %v", n, len(raw), err)
		}
	}
}
