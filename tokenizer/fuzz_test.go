package tokenizer

import (
	"strings"
	"testing"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// FuzzEncodeDecode: Encode never panics, its ids are all decodable, and for valid
// UTF-8 decode(encode(x)) == NFC(x). The reference normalizes the text between added
// tokens, not across them, so where x holds an added token the expectation is NFC
// of each stretch between them (it differs from NFC(x) only where a combining mark
// follows an added token: '>' + U+0338 would compose to U+226F).
func FuzzEncodeDecode(f *testing.F) {
	tok := qwen3(f)
	for _, c := range golden(f) {
		f.Add(c.Text)
	}
	f.Add("<|im_end|>\u0338")
	f.Add("a\xffb\xe2\x82")
	f.Fuzz(func(t *testing.T, s string) {
		ids := tok.Encode(s)
		back, err := tok.Decode(ids)
		if err != nil {
			t.Fatalf("Decode(Encode(%q)): %v", s, err)
		}
		if !utf8.ValidString(s) {
			s = ValidUTF8(s)
		}
		if want := nfcBetweenAdded(tok, s); back != want {
			t.Fatalf("Decode(Encode(%q)) = %q, want %q", s, back, want)
		}
		if !strings.Contains(s, "<") && !strings.Contains(s, "\u0338") && back != norm.NFC.String(s) {
			t.Fatalf("Decode(Encode(%q)) = %q, want NFC %q", s, back, norm.NFC.String(s))
		}
	})
}

// nfcBetweenAdded is s with the text between added tokens in NFC.
func nfcBetweenAdded(tok *Tokenizer, s string) string {
	var b strings.Builder
	for {
		at, a := tok.findAdded(s)
		if at < 0 {
			b.WriteString(norm.NFC.String(s))
			return b.String()
		}
		b.WriteString(norm.NFC.String(s[:at]))
		b.WriteString(a.Content)
		s = s[at+len(a.Content):]
	}
}
