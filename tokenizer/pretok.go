package tokenizer

import (
	"unicode"
	"unicode/utf8"
)

// The Split pre-tokenizer patterns this package implements, as tokenizer.json spells
// them. Go's regexp has no lookahead, so `\s+(?!\S)` cannot be compiled; instead a
// scanner (splitter.next) walks the text with the regex's semantics: at each position
// the alternatives are tried in order, the first that matches wins, and each greedy
// quantifier backtracks as a backtracking engine would.
const (
	// qwen2Pattern is the split regex of Qwen2, Qwen2.5, Qwen3 and Qwen3-Next.
	qwen2Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
	// qwen35Pattern is Qwen3.5's: combining marks (\p{M}) join letter runs and leave
	// the punctuation class.
	qwen35Pattern = `(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`
)

// Rune classes of the patterns, one bit each.
const (
	clLetter  = 1 << iota // \p{L} (and \p{M} in Qwen3.5's letter runs)
	clNumber              // \p{N}
	clSpace               // \s: the Unicode White_Space property, as the reference uses
	clNewline             // \r or \n
	clOther               // none of letter, number, space: [^\s\p{L}\p{N}]
)

// asciiClass holds the classes of the ASCII runes (the common case) for the Qwen2
// pattern; no ASCII rune is a mark, so it serves both patterns.
var asciiClass [utf8.RuneSelf]uint8

func init() {
	for r := rune(0); r < utf8.RuneSelf; r++ {
		asciiClass[r] = classOf(r, false)
	}
}

// classOf is the class bits of r; marks count as letters when marks is set.
func classOf(r rune, marks bool) uint8 {
	switch {
	case r == '\r' || r == '\n':
		return clSpace | clNewline
	case unicode.IsLetter(r) || (marks && unicode.IsMark(r)):
		return clLetter
	case unicode.IsNumber(r):
		return clNumber
	case unicode.Is(unicode.White_Space, r):
		return clSpace
	}
	return clOther
}

// splitter walks a valid UTF-8 string piece by piece.
type splitter struct {
	s     string
	marks bool // Qwen3.5's pattern: marks are letters
}

// at returns the rune at i, its size and its class (size 0 at the end).
func (p *splitter) at(i int) (rune, int, uint8) {
	if i >= len(p.s) {
		return 0, 0, 0
	}
	if c := p.s[i]; c < utf8.RuneSelf {
		return rune(c), 1, asciiClass[c]
	}
	r, n := utf8.DecodeRuneInString(p.s[i:])
	return r, n, classOf(r, p.marks)
}

// run returns the end of the run of runes from i whose class has a bit of want.
func (p *splitter) run(i int, want uint8) int {
	for i < len(p.s) {
		_, n, c := p.at(i)
		if c&want == 0 {
			break
		}
		i += n
	}
	return i
}

// next returns the end of the piece that starts at i (i < len(s)).
func (p *splitter) next(i int) int {
	r, n, c := p.at(i)
	// (?i:'s|'t|'re|'ve|'m|'ll|'d): an ASCII apostrophe, case folded in ASCII only.
	if r == '\'' {
		if end := contraction(p.s[i+1:]); end > 0 {
			return i + 1 + end
		}
	}
	// [^\r\n\p{L}\p{N}]?\p{L}+: a letter run, with one optional rune before it that is
	// not a newline, letter or number.
	if c&clLetter != 0 {
		return p.run(i+n, clLetter)
	}
	_, n2, c2 := p.at(i + n)
	if c&(clNewline|clNumber) == 0 && c2&clLetter != 0 {
		return p.run(i+n+n2, clLetter)
	}
	// \p{N}: one number rune.
	if c&clNumber != 0 {
		return i + n
	}
	// ` ?[^\s\p{L}\p{N}]+[\r\n]*`
	if c&clOther != 0 {
		return p.run(p.run(i+n, clOther), clNewline)
	}
	if r == ' ' && c2&clOther != 0 {
		return p.run(p.run(i+n+n2, clOther), clNewline)
	}
	// c is whitespace: the run of it is [i, end).
	end, last, lastNL := i, i, -1
	for end < len(p.s) {
		_, m, cm := p.at(end)
		if cm&clSpace == 0 {
			break
		}
		if cm&clNewline != 0 {
			lastNL = end
		}
		last = end
		end += m
	}
	switch {
	case lastNL >= 0: // \s*[\r\n]+: the greedy \s* backs off to the run's last newline
		return lastNL + 1
	case end == len(p.s): // \s+(?!\S) at the end of the text: all of it
		return end
	case last > i: // \s+(?!\S): all but the run's last rune, which precedes a non-space
		return last
	}
	return end // \s+: a single space before a non-space
}

// contraction returns the length of the contraction suffix ('s, 't, 're, 've, 'm, 'll,
// 'd, in any ASCII case) at the start of s, or 0.
func contraction(s string) int {
	if len(s) == 0 {
		return 0
	}
	switch s[0] | 0x20 {
	case 's', 't', 'm', 'd':
		return 1
	case 'r', 'v':
		if len(s) > 1 && s[1]|0x20 == 'e' {
			return 2
		}
	case 'l':
		if len(s) > 1 && s[1]|0x20 == 'l' {
			return 2
		}
	}
	return 0
}
