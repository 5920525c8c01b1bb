package tokenizer

import "unicode/utf8"

// The byte-level alphabet (GPT-2's): every byte has a printable rune, so a token's
// string in tokenizer.json names bytes. Printable Latin-1 bytes stand for
// themselves; the other 68 bytes take U+0100 onward, in byte order.
var (
	byteRune [256]rune // byte -> its rune in the alphabet
	hiByte   [68]byte  // and back, for the runes from U+0100
)

func init() {
	next := rune(0x100)
	for b := 0; b < 256; b++ {
		printable := (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE
		r := rune(b)
		if !printable {
			r = next
			next++
		}
		byteRune[b] = r
		if r >= 0x100 {
			hiByte[r-0x100] = byte(b)
		}
	}
}

// appendTokenBytes appends the bytes a vocabulary token's string stands for. A
// string with a rune outside the alphabet stands for its own UTF-8 bytes, as the
// reference's ByteLevel decoder falls back to.
func appendTokenBytes(dst []byte, tok string) []byte {
	start := len(dst)
	for _, r := range tok {
		b, ok := byteOf(r)
		if !ok {
			return append(dst[:start], tok...)
		}
		dst = append(dst, b)
	}
	return dst
}

// byteOf is the byte a rune of the alphabet stands for.
func byteOf(r rune) (byte, bool) {
	if r < 0x100 && byteRune[r] == r {
		return byte(r), true // printable Latin-1 stands for itself
	}
	if r >= 0x100 && r < 0x100+68 {
		return hiByte[r-0x100], true
	}
	return 0, false
}

// byteLevel returns s's bytes spelled in the alphabet (the vocabulary's keys).
func byteLevel(s string) string {
	buf := make([]byte, 0, 2*len(s))
	for i := 0; i < len(s); i++ {
		buf = utf8.AppendRune(buf, byteRune[s[i]])
	}
	return string(buf)
}

// appendLossy appends b to dst as valid UTF-8: each maximal subpart of an ill-formed
// sequence becomes one U+FFFD (the Unicode standard's recommended practice, which
// the reference's lossy decode follows).
func appendLossy(dst []byte, b []byte) []byte {
	for i := 0; i < len(b); {
		if b[i] < utf8.RuneSelf {
			dst = append(dst, b[i])
			i++
			continue
		}
		r, n := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || n > 1 {
			dst = append(dst, b[i:i+n]...)
			i += n
			continue
		}
		dst = utf8.AppendRune(dst, utf8.RuneError)
		i += max(1, validPrefix(b[i:]))
	}
	return dst
}

// validPrefix returns how many bytes at the start of b begin a well-formed UTF-8
// sequence without completing it (0 if b[0] cannot start one).
func validPrefix(b []byte) int {
	need, lo, hi := 0, byte(0x80), byte(0xBF)
	switch c := b[0]; {
	case c >= 0xC2 && c <= 0xDF:
		need = 2
	case c == 0xE0:
		need, lo = 3, 0xA0
	case c == 0xED:
		need, hi = 3, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		need = 3
	case c == 0xF0:
		need, lo = 4, 0x90
	case c == 0xF4:
		need, hi = 4, 0x8F
	case c >= 0xF1 && c <= 0xF3:
		need = 4
	default:
		return 0
	}
	n := 1
	for n < need && n < len(b) {
		if b[n] < lo || b[n] > hi {
			break
		}
		lo, hi = 0x80, 0xBF
		n++
	}
	if n == need {
		return 0 // complete: not a prefix
	}
	return n
}
