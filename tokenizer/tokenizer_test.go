package tokenizer

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"os"
	"slices"
	"sync"
	"testing"

	"golang.org/x/text/unicode/norm"
)

const qwen3Path = "testdata/qwen3/tokenizer.json.gz"

var (
	qwen3Once sync.Once
	qwen3Tok  *Tokenizer
	qwen3Err  error
)

// qwen3 loads the committed Qwen3 tokenizer once per test binary.
func qwen3(tb testing.TB) *Tokenizer {
	tb.Helper()
	qwen3Once.Do(func() { qwen3Tok, qwen3Err = Load(qwen3Path) })
	if qwen3Err != nil {
		tb.Fatal(qwen3Err)
	}
	return qwen3Tok
}

type goldenCase struct {
	Text string  `json:"text"`
	IDs  []int32 `json:"ids"`
}

func golden(tb testing.TB) []goldenCase {
	tb.Helper()
	b, err := os.ReadFile("testdata/golden.json")
	if err != nil {
		tb.Fatal(err)
	}
	var g []goldenCase
	if err := json.Unmarshal(b, &g); err != nil {
		tb.Fatal(err)
	}
	return g
}

// TestGolden: the ids equal the reference's (scripts/tokenizer-golden.mjs) on every
// corpus string, and decoding them gives the NFC text back.
func TestGolden(t *testing.T) {
	tok := qwen3(t)
	g := golden(t)
	if len(g) < 40 {
		t.Fatalf("golden.json has %d strings", len(g))
	}
	for _, c := range g {
		got := tok.Encode(c.Text)
		if !slices.Equal(got, c.IDs) {
			t.Errorf("Encode(%q)\n got %v\nwant %v", c.Text, got, c.IDs)
			continue
		}
		back, err := tok.Decode(got)
		if err != nil {
			t.Fatal(err)
		}
		if want := norm.NFC.String(c.Text); back != want {
			t.Errorf("Decode(Encode(%q)) = %q, want %q", c.Text, back, want)
		}
	}
}

// TestStreamMatchesDecode: the pieces a Stream returns, pushed one id at a time,
// concatenate to Decode of all the ids, even where tokens split characters.
func TestStreamMatchesDecode(t *testing.T) {
	tok := qwen3(t)
	for _, c := range golden(t) {
		checkStream(t, tok, c.IDs)
	}
	// Ids whose bytes are pieces of characters, in orders that complete them, leave
	// them cut, or never complete them.
	euro := []byte("€😀")
	var ids []int32
	for _, b := range euro {
		ids = append(ids, tok.byteID[b])
	}
	checkStream(t, tok, ids)
	checkStream(t, tok, ids[1:])                                     // starts mid-sequence
	checkStream(t, tok, ids[:len(ids)-1])                            // ends mid-sequence
	checkStream(t, tok, append(slices.Clone(ids[:2]), ids[3:]...))   // a hole
	checkStream(t, tok, []int32{tok.byteID[0xF0], tok.byteID['a']})  // a lead, then ASCII
	checkStream(t, tok, []int32{tok.byteID[0xE0], tok.byteID[0x80]}) // an overlong prefix
	s := tok.NewStream()
	if out, _ := s.Push(ids[0]); out != "" {
		t.Errorf("Push of an incomplete sequence returned %q, want it held", out)
	}
	if out := s.Flush(); out != "\uFFFD" {
		t.Errorf("Flush of a held lead byte = %q, want U+FFFD", out)
	}
}

func checkStream(t *testing.T, tok *Tokenizer, ids []int32) {
	t.Helper()
	want, err := tok.Decode(ids)
	if err != nil {
		t.Fatal(err)
	}
	s := tok.NewStream()
	got := ""
	for _, id := range ids {
		out, err := s.Push(id)
		if err != nil {
			t.Fatal(err)
		}
		got += out
	}
	got += s.Flush()
	if got != want {
		t.Errorf("stream of %v = %q, Decode = %q", ids, got, want)
	}
}

// decompressed returns the Qwen3 tokenizer.json's bytes.
func decompressed(tb testing.TB) []byte {
	tb.Helper()
	f, err := os.Open(qwen3Path)
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		tb.Fatal(err)
	}
	raw, err := io.ReadAll(z)
	if err != nil {
		tb.Fatal(err)
	}
	return raw
}

// TestGoldenQwen35Regex: with Qwen3.5's split regex (marks join letter runs) over
// Qwen3's vocabulary, the ids equal the reference's too.
func TestGoldenQwen35Regex(t *testing.T) {
	raw := decompressed(t)
	from, _ := json.Marshal(qwen2Pattern)
	to, _ := json.Marshal(qwen35Pattern)
	if !bytes.Contains(raw, from) {
		t.Fatal("tokenizer.json does not spell the Qwen2 regex as encoding/json does")
	}
	tok, err := Parse(bytes.Replace(raw, from, to, 1), "qwen35-regex")
	if err != nil {
		t.Fatal(err)
	}
	if !tok.marks {
		t.Fatal("Qwen3.5's regex not recognized")
	}
	b, err := os.ReadFile("testdata/golden-qwen35-regex.json")
	if err != nil {
		t.Fatal(err)
	}
	var g []goldenCase
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	for _, c := range g {
		if got := tok.Encode(c.Text); !slices.Equal(got, c.IDs) {
			t.Errorf("Encode(%q)\n got %v\nwant %v", c.Text, got, c.IDs)
		}
	}
}
