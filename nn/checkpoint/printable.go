package checkpoint

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Printable returns s with every rune that is not printable (control characters such
// as ESC and newline, bidirectional overrides and other format characters) and every
// byte of invalid UTF-8 written as a Go escape (\x1b, \n, \u202e, \xff). Strings that
// come from a file (tensor and shard names, config keys) pass through it before they
// reach a terminal or a log, so a name holding terminal escapes cannot clear the
// screen or print a line of its own. The error types of this package and of the model
// packages apply it to their whole message.
func Printable(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || !strconv.IsPrint(r) {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x` + strconv.FormatUint(uint64(s[i])>>4, 16) + strconv.FormatUint(uint64(s[i])&15, 16))
		case strconv.IsPrint(r):
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}

// shortRunes is how much of a string from a file an error message quotes.
const shortRunes = 40

// QuoteShort quotes s as %q does, but at most its first 40 runes: a longer s is cut
// there and followed by `... (N bytes)`, so that a 50 MB name or value from a file
// yields a short message. The config parsers quote every string of the file with it.
func QuoteShort(s string) string {
	head, cut := shortPrefix(s)
	if !cut {
		return strconv.Quote(s)
	}
	return strconv.Quote(head) + "... (" + strconv.Itoa(len(s)) + " bytes)"
}

// Snippet is raw JSON text for an error message: trimmed, and cut after 40 runes
// with `... (N bytes)` when longer.
func Snippet(raw []byte) string { return Short(strings.TrimSpace(string(raw))) }

// Short is s for an error message unquoted (a key): cut after 40 runes with
// `... (N bytes)` when longer.
func Short(s string) string {
	head, cut := shortPrefix(s)
	if !cut {
		return s
	}
	return head + "... (" + strconv.Itoa(len(s)) + " bytes)"
}

// shortPrefix is s's first shortRunes runes, and whether s is longer.
func shortPrefix(s string) (string, bool) {
	n := 0
	for i := range s {
		if n == shortRunes {
			return s[:i], true
		}
		n++
	}
	return s, false
}
