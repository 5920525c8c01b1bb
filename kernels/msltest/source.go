package msltest

import (
	"fmt"
	"strings"
)

// tokKind classifies the tokens of the small C++ lexer below.
type tokKind int

const (
	tokIdent tokKind = iota
	tokNumber
	tokPunct
	tokString
)

// token is one lexed token; pos and end are byte offsets into the source.
type token struct {
	kind      tokKind
	text      string
	pos, end  int
	line      int
	directive int // index of the preprocessor directive holding it, or -1
}

// lex splits MSL source into tokens, dropping comments and whitespace. It
// only needs to be good enough to find kernel signatures, `threadgroup`
// declarations and floating literals; g++ does the real parsing.
func lex(src string) ([]token, error) {
	var toks []token
	line := 1
	directive := -1 // the directive the current line belongs to
	directives := 0
	lineStart := true // only whitespace seen since the last newline
	i := 0
	for i < len(src) {
		c := src[i]
		switch {
		case c == '\n':
			line++
			i++
			directive = -1
			lineStart = true
			continue
		case c == '\\' && i+1 < len(src) && src[i+1] == '\n':
			line++ // a continued line stays in its directive
			i += 2
			continue
		case c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v':
			i++
			continue
		case c == '/' && i+1 < len(src) && src[i+1] == '/':
			for i < len(src) && src[i] != '\n' {
				i++
			}
			continue
		case c == '/' && i+1 < len(src) && src[i+1] == '*':
			endc := strings.Index(src[i+2:], "*/")
			if endc < 0 {
				return nil, fmt.Errorf("line %d: unterminated comment", line)
			}
			line += strings.Count(src[i:i+2+endc+2], "\n")
			i += 2 + endc + 2
			continue
		}
		if c == '#' && lineStart {
			directive = directives
			directives++
		}
		lineStart = false
		start := i
		kind := tokPunct
		switch {
		case isIdentStart(c):
			kind = tokIdent
			for i < len(src) && isIdentChar(src[i]) {
				i++
			}
		case isDigit(c) || (c == '.' && i+1 < len(src) && isDigit(src[i+1])):
			kind = tokNumber
			i++
			for i < len(src) {
				d := src[i]
				if (d == '+' || d == '-') && strings.ContainsRune("eEpP", rune(src[i-1])) {
					i++
				} else if isIdentChar(d) || d == '.' || d == '\'' {
					i++
				} else {
					break
				}
			}
		case c == '"' || c == '\'':
			kind = tokString
			i++
			for i < len(src) && src[i] != c {
				if src[i] == '\\' {
					i++
				}
				if i < len(src) && src[i] == '\n' {
					return nil, fmt.Errorf("line %d: unterminated literal", line)
				}
				i++
			}
			if i >= len(src) {
				return nil, fmt.Errorf("line %d: unterminated literal", line)
			}
			i++
		default:
			i++
		}
		toks = append(toks, token{kind: kind, text: src[start:i], pos: start, end: i, line: line, directive: directive})
	}
	return toks, nil
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentChar(c byte) bool { return isIdentStart(c) || isDigit(c) }

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// edit replaces src[pos:end] with text.
type edit struct {
	pos, end int
	text     string
}

// rewrite returns the source g++ compiles: the same lines, with
//   - each `threadgroup` turned into `static` for a threadgroup variable
//     (followed by a call that registers it, on the same line) or blanked
//     out for a pointer or reference into threadgroup memory;
//   - `bool` after an address space (device bool*, const constant bool&)
//     turned into msl_bool, which keeps only the low bit of the byte it
//     loads, as a GPU may: a mask byte other than 0 or 1 then reads
//     differently from the Go twins' "non-zero is true";
//   - floating literals without a suffix given one (MSL has no double, so
//     1.5 is a float there) and `1.5h` turned into half(1.5f).
//
// A quoted #include is refused: Metal compiles the source from a string at
// run time and cannot read neighbouring files either.
func rewrite(src string, toks []token) (string, error) {
	var edits []edit
	for i, t := range toks {
		if t.directive >= 0 && t.text == "#" && i+2 < len(toks) && toks[i+1].text == "include" && toks[i+1].directive == t.directive {
			if toks[i+2].kind == tokString {
				return "", fmt.Errorf("line %d: #include %s: only <metal_*> headers can be included", t.line, toks[i+2].text)
			}
		}
		switch {
		case t.kind == tokNumber:
			if e, ok := floatLiteral(t); ok {
				edits = append(edits, e)
			}
		case t.kind == tokIdent && t.text == "bool" && inMemory(toks, i):
			edits = append(edits, edit{t.pos, t.end, "msl_bool"})
		case t.kind == tokIdent && t.text == "threadgroup":
			if i > 0 && toks[i-1].text == "[" {
				continue // the [[threadgroup(n)]] attribute; rejected on kernels
			}
			edits = append(edits, threadgroupEdits(toks, i)...)
		}
	}
	var b strings.Builder
	last := 0
	for _, e := range edits {
		b.WriteString(src[last:e.pos])
		b.WriteString(e.text)
		last = e.end
	}
	b.WriteString(src[last:])
	return b.String(), nil
}

// inMemory reports whether toks[i] follows an address-space qualifier,
// possibly with const between them.
func inMemory(toks []token, i int) bool {
	for j := i - 1; j >= 0 && j >= i-2; j-- {
		switch toks[j].text {
		case "device", "constant", "threadgroup":
			return true
		case "const":
			continue
		}
		return false
	}
	return false
}

// floatLiteral gives the edit making a floating literal a float, if needed.
func floatLiteral(t token) (edit, bool) {
	s := t.text
	lower := strings.ToLower(s)
	hex := strings.HasPrefix(lower, "0x")
	isFloat := strings.Contains(s, ".") || (!hex && strings.ContainsAny(lower, "e")) || (hex && strings.Contains(lower, "p"))
	if !isFloat {
		return edit{}, false
	}
	switch lower[len(lower)-1] {
	case 'f', 'l':
		return edit{}, false
	case 'h':
		return edit{t.pos, t.end, "half(" + s[:len(s)-1] + "f)"}, true
	}
	return edit{t.end, t.end, "f"}, true
}

// threadgroupEdits classifies the declaration starting at toks[i], the
// token `threadgroup`.
func threadgroupEdits(toks []token, i int) []edit {
	t := toks[i]
	blank := []edit{{t.pos, t.end, strings.Repeat(" ", len(t.text))}}
	depth := 0
	end := -1
	for j := i + 1; j < len(toks) && toks[j].directive == t.directive; j++ {
		s := toks[j].text
		switch s {
		case "(", "[", "<", "{":
			depth++
			continue
		case ")", "]", ">", "}":
			depth--
			if depth < 0 {
				return blank // a cast such as (threadgroup float*)p
			}
			continue
		}
		if depth > 0 {
			continue
		}
		if s == "*" || s == "&" {
			return blank
		}
		if s == ";" || s == "=" {
			end = j
			break
		}
	}
	if end < 0 {
		return blank
	}
	edits := []edit{{t.pos, t.end, "static     "}}
	if toks[end].text != ";" {
		return edits
	}
	var reg strings.Builder
	for _, name := range declaratorNames(toks[i+1 : end]) {
		fmt.Fprintf(&reg, " msl_detail::tg_register(&%s, sizeof(%s));", name, name)
	}
	return append(edits, edit{toks[end].end, toks[end].end, reg.String()})
}

// declaratorNames returns the variable names declared by the tokens between
// `threadgroup` and `;`, e.g. "float a[32], b[8]" gives a and b.
func declaratorNames(toks []token) []string {
	var names []string
	depth := 0
	name := ""
	closed := false // saw a top-level '[': the name is fixed
	for _, t := range toks {
		switch t.text {
		case "(", "<", "{":
			depth++
		case ")", ">", "}", "]":
			depth--
		case "[":
			if depth == 0 {
				closed = true
			}
			depth++
		case ",":
			if depth == 0 {
				names = append(names, name)
				name, closed = "", false
			}
		default:
			if depth == 0 && !closed && t.kind == tokIdent {
				name = t.text
			}
		}
	}
	if name != "" {
		names = append(names, name)
	}
	return names
}
