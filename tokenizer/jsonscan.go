package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// A tokenizer.json is 11 MB (Qwen3) to 20 MB (Qwen3.5), nearly all of it the
// vocabulary and the merges. encoding/json takes about a second on them (reflection,
// one allocation a string); this scanner reads those two directly into the maps
// (strings sliced from one copy of the file, ids parsed in place) and hands the small
// rest to encoding/json, which keeps the loader under the 200 ms target.

// scanner reads JSON from src; s is src as one string, so unescaped strings are
// substrings of it without a copy.
type scanner struct {
	s   string
	pos int
}

// syntaxError is invalid JSON at a byte offset.
type syntaxError struct {
	Offset int
	Msg    string
}

func (e *syntaxError) Error() string {
	return fmt.Sprintf("invalid JSON at byte %d: %s", e.Offset, e.Msg)
}

func (p *scanner) fail(f string, a ...any) error {
	return &syntaxError{Offset: p.pos, Msg: fmt.Sprintf(f, a...)}
}

func (p *scanner) ws() {
	for p.pos < len(p.s) {
		switch p.s[p.pos] {
		case ' ', '\t', '\n', '\r':
			p.pos++
		default:
			return
		}
	}
}

// peek returns the next non-space byte (0 at the end).
func (p *scanner) peek() byte {
	p.ws()
	if p.pos >= len(p.s) {
		return 0
	}
	return p.s[p.pos]
}

func (p *scanner) expect(c byte) error {
	if p.peek() != c {
		if p.pos >= len(p.s) {
			return p.fail("unexpected end, want %q", c)
		}
		return p.fail("found %q, want %q", p.s[p.pos], c)
	}
	p.pos++
	return nil
}

// str reads a string.
func (p *scanner) str() (string, error) {
	if err := p.expect('"'); err != nil {
		return "", err
	}
	start := p.pos
	for i := start; i < len(p.s); i++ {
		switch c := p.s[i]; {
		case c == '"':
			p.pos = i + 1
			return p.s[start:i], nil
		case c == '\\':
			return p.slowStr(start)
		case c < 0x20:
			p.pos = i
			return "", p.fail("control character 0x%02x in a string", c)
		}
	}
	p.pos = len(p.s)
	return "", p.fail("unterminated string")
}

// slowStr reads a string with escapes, from its first byte at start.
func (p *scanner) slowStr(start int) (string, error) {
	var b []byte
	i := start
	for i < len(p.s) {
		c := p.s[i]
		switch {
		case c == '"':
			p.pos = i + 1
			return string(b), nil
		case c < 0x20:
			p.pos = i
			return "", p.fail("control character 0x%02x in a string", c)
		case c != '\\':
			b = append(b, c)
			i++
			continue
		}
		if i+1 >= len(p.s) {
			break
		}
		e := p.s[i+1]
		i += 2
		switch e {
		case '"', '\\', '/':
			b = append(b, e)
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r, ok := hex4(p.s, i)
			if !ok {
				p.pos = i
				return "", p.fail("bad \\u escape")
			}
			i += 4
			if utf16.IsSurrogate(r) {
				r2, ok := rune(-1), false
				if i+6 <= len(p.s) && p.s[i] == '\\' && p.s[i+1] == 'u' {
					r2, ok = hex4(p.s, i+2)
				}
				if ok {
					if d := utf16.DecodeRune(r, r2); d != utf8.RuneError {
						r = d
						i += 6
					} else {
						r = utf8.RuneError
					}
				} else {
					r = utf8.RuneError
				}
			}
			b = utf8.AppendRune(b, r)
		default:
			p.pos = i - 1
			return "", p.fail("bad escape \\%c", e)
		}
	}
	p.pos = len(p.s)
	return "", p.fail("unterminated string")
}

func hex4(s string, i int) (rune, bool) {
	if i+4 > len(s) {
		return 0, false
	}
	v, err := strconv.ParseUint(s[i:i+4], 16, 16)
	return rune(v), err == nil
}

// value reads any value and returns its JSON text (for encoding/json to decode).
func (p *scanner) value() (string, error) {
	p.ws()
	start := p.pos
	if err := p.skip(0); err != nil {
		return "", err
	}
	return p.s[start:p.pos], nil
}

// maxDepth bounds nesting, so a hostile file cannot exhaust the stack.
const maxDepth = 64

// skip passes over one value, checking its syntax.
func (p *scanner) skip(depth int) error {
	if depth > maxDepth {
		return p.fail("nested deeper than %d", maxDepth)
	}
	switch c := p.peek(); {
	case c == '"':
		_, err := p.str()
		return err
	case c == '{':
		return p.object(func(string) error { return p.skip(depth + 1) })
	case c == '[':
		return p.array(func() error { return p.skip(depth + 1) })
	case c == '-' || (c >= '0' && c <= '9'):
		_, err := p.number()
		return err
	}
	for _, lit := range []string{"true", "false", "null"} {
		if len(p.s)-p.pos >= len(lit) && p.s[p.pos:p.pos+len(lit)] == lit {
			p.pos += len(lit)
			return nil
		}
	}
	if p.pos >= len(p.s) {
		return p.fail("unexpected end")
	}
	return p.fail("unexpected %q", p.s[p.pos])
}

// number reads a JSON number's text.
func (p *scanner) number() (string, error) {
	p.ws()
	start := p.pos
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		if (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E' {
			p.pos++
			continue
		}
		break
	}
	text := p.s[start:p.pos]
	if !json.Valid([]byte(text)) {
		p.pos = start
		return "", p.fail("bad number %q", text)
	}
	return text, nil
}

// object reads an object, calling each for every key with the scanner at its value
// (each must read the value).
func (p *scanner) object(each func(key string) error) error {
	if err := p.expect('{'); err != nil {
		return err
	}
	if p.peek() == '}' {
		p.pos++
		return nil
	}
	for {
		k, err := p.str()
		if err != nil {
			return err
		}
		if err := p.expect(':'); err != nil {
			return err
		}
		if err := each(k); err != nil {
			return err
		}
		switch p.peek() {
		case ',':
			p.pos++
		case '}':
			p.pos++
			return nil
		default:
			return p.fail("want ',' or '}' in an object")
		}
	}
}

// array reads an array, calling each with the scanner at every element.
func (p *scanner) array(each func() error) error {
	if err := p.expect('['); err != nil {
		return err
	}
	if p.peek() == ']' {
		p.pos++
		return nil
	}
	for {
		if err := each(); err != nil {
			return err
		}
		switch p.peek() {
		case ',':
			p.pos++
		case ']':
			p.pos++
			return nil
		default:
			return p.fail("want ',' or ']' in an array")
		}
	}
}

// int32 reads an integer that fits int32.
func (p *scanner) int32() (int32, error) {
	text, err := p.number()
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseInt(text, 10, 32)
	if err != nil {
		return 0, p.fail("%s is not an integer id", text)
	}
	return int32(v), nil
}

// rawFile is tokenizer.json split: the vocabulary and merges read by the scanner,
// everything else as JSON text for encoding/json.
type rawFile struct {
	rest   map[string]json.RawMessage // top-level keys but "model"
	model  map[string]json.RawMessage // model's keys but vocab and merges
	vocab  []vocabEntry
	merges [][2]string
	hasVoc bool
	hasMrg bool
}

var errNotObject = errors.New("not a JSON object")

// scanFile splits data into a rawFile.
func scanFile(data []byte) (*rawFile, error) {
	p := &scanner{s: string(data)}
	if p.peek() != '{' {
		return nil, errNotObject
	}
	f := &rawFile{rest: map[string]json.RawMessage{}, model: map[string]json.RawMessage{}}
	err := p.object(func(k string) error {
		if k != "model" || p.peek() != '{' {
			v, err := p.value()
			f.rest[k] = json.RawMessage(v)
			return err
		}
		f.rest["model"] = json.RawMessage("{}")
		return p.object(func(k string) error {
			switch k {
			case "vocab":
				f.hasVoc = true
				return f.scanVocab(p)
			case "merges":
				f.hasMrg = true
				return f.scanMerges(p)
			}
			v, err := p.value()
			f.model[k] = json.RawMessage(v)
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	if p.peek() != 0 {
		return nil, p.fail("data after the top-level object")
	}
	return f, nil
}

func (f *rawFile) scanVocab(p *scanner) error {
	if p.peek() != '{' {
		return p.fail("model.vocab is not an object")
	}
	f.vocab = make([]vocabEntry, 0, 1<<18) // Qwen3's 151,643 without a copy
	return p.object(func(k string) error {
		id, err := p.int32()
		f.vocab = append(f.vocab, vocabEntry{tok: k, id: id})
		return err
	})
}

// scanMerges reads merges given as pairs ["a", "b"] or as strings "a b".
func (f *rawFile) scanMerges(p *scanner) error {
	if p.peek() != '[' {
		return p.fail("model.merges is not a list")
	}
	f.merges = make([][2]string, 0, 1<<18)
	return p.array(func() error {
		var pair [2]string
		if p.peek() == '"' {
			s, err := p.str()
			if err != nil {
				return err
			}
			n := len(f.merges)
			for i := 0; i < len(s); i++ {
				if s[i] == ' ' {
					pair[0], pair[1] = s[:i], s[i+1:]
					f.merges = append(f.merges, pair)
					break
				}
			}
			if len(f.merges) == n {
				return fmt.Errorf("model.merges[%d]: %q is not two tokens separated by a space", n, s)
			}
			return nil
		}
		i := 0
		err := p.array(func() error {
			s, err := p.str()
			if i < 2 {
				pair[i] = s
			}
			i++
			return err
		})
		if err == nil && i != 2 {
			err = fmt.Errorf("model.merges[%d]: a pair must have 2 tokens, not %d", len(f.merges), i)
		}
		f.merges = append(f.merges, pair)
		return err
	})
}
