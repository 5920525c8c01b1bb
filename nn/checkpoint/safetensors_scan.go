package checkpoint

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// This file splits a safetensors header into its members quickly. encoding/json's
// tokenizer allocates per token, which made a header of a million tensors cost ~9 s;
// here a header already known to be valid JSON is walked with a few byte loops, and
// any entry outside the plain form every writer produces goes to the careful decoder
// (decodeEntry), so the result and every error stay exactly what it gives.

// memberReader yields the header object's members in order: ok is false after the last.
type memberReader interface {
	next() (name string, raw json.RawMessage, ok bool, err error)
}

// tokenMembers reads members with encoding/json: for headers that are not valid JSON,
// so that the error names what is wrong and where.
type tokenMembers struct {
	file   string
	header []byte
	dec    *json.Decoder
}

func (m *tokenMembers) next() (string, json.RawMessage, bool, error) {
	fail := func(tensor, format string, args ...any) error {
		return &FormatError{File: m.file, Tensor: tensor, Reason: fmt.Sprintf(format, args...)}
	}
	if !m.dec.More() {
		if _, err := m.dec.Token(); err != nil { // the closing brace
			return "", nil, false, fail("", "header is not valid JSON: %s", jsonReason(err))
		}
		if rest := bytes.TrimSpace(m.header[m.dec.InputOffset():]); len(rest) > 0 {
			return "", nil, false, fail("", "unexpected bytes after the header's JSON object")
		}
		return "", nil, false, nil
	}
	tok, err := m.dec.Token()
	if err != nil {
		return "", nil, false, fail("", "header is not valid JSON: %s", jsonReason(err))
	}
	name, ok := tok.(string)
	if !ok {
		return "", nil, false, fail("", "header is not valid JSON: object key is not a string")
	}
	var raw json.RawMessage
	if err := m.dec.Decode(&raw); err != nil {
		return "", nil, false, fail(name, "header is not valid JSON: %s", jsonReason(err))
	}
	return name, raw, true, nil
}

// validMembers walks a header that json.Valid accepted and that starts with '{'.
type validMembers struct {
	header []byte
	pos    int // just past '{' or the last member's value
}

func (m *validMembers) next() (string, json.RawMessage, bool, error) {
	h := m.header
	i := skipSpace(h, m.pos)
	if h[i] == ',' {
		i = skipSpace(h, i+1)
	}
	if h[i] == '}' {
		return "", nil, false, nil // valid JSON: only whitespace follows
	}
	keyEnd := valueEnd(h, i)
	name, err := jsonString(h[i:keyEnd])
	if err != nil {
		return "", nil, false, err
	}
	i = skipSpace(h, skipSpace(h, keyEnd)+1) // past ':'
	end := valueEnd(h, i)
	m.pos = end
	return name, h[i:end:end], true, nil
}

// jsonString decodes a JSON string literal (quotes included), quickly when it has no escapes.
func jsonString(lit []byte) (string, error) {
	if bytes.IndexByte(lit, '\\') < 0 {
		return string(lit[1 : len(lit)-1]), nil
	}
	var s string
	err := json.Unmarshal(lit, &s)
	return s, err
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// valueEnd returns the end of the JSON value starting at b[i], which must be valid.
func valueEnd(b []byte, i int) int {
	switch b[i] {
	case '"':
		for i++; b[i] != '"'; i++ {
			if b[i] == '\\' {
				i++
			}
		}
		return i + 1
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch b[i] {
			case '"':
				i = valueEnd(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
	}
	for i < len(b) && !strings.ContainsRune(",}] \t\n\r", rune(b[i])) {
		i++
	}
	return i
}

// scanEntry reads an entry of the plain form {"dtype": "F32", "shape": [2, 3],
// "data_offsets": [0, 24]} (keys in any order, other keys skipped) from valid JSON. ok
// is false for anything else (a null, an escape, a key differing only in case, a
// number that is not a plain int64, too many values): decodeEntry then decides.
func scanEntry(raw []byte) (dtName string, dims, offs []int64, ok bool) {
	if len(raw) == 0 || raw[0] != '{' {
		return "", nil, nil, false
	}
	var haveDType, haveShape, haveOffs bool
	i := skipSpace(raw, 1)
	for raw[i] != '}' {
		keyEnd := valueEnd(raw, i)
		key := raw[i+1 : keyEnd-1]
		i = skipSpace(raw, skipSpace(raw, keyEnd)+1)
		end := valueEnd(raw, i)
		val := raw[i:end]
		switch k := string(key); k {
		case "dtype":
			if val[0] != '"' || bytes.IndexByte(val, '\\') >= 0 {
				return "", nil, nil, false
			}
			dtName, haveDType = string(val[1:len(val)-1]), true
		case "shape":
			if dims, ok = scanInts(val, MaxRank); !ok {
				return "", nil, nil, false
			}
			haveShape = true
		case "data_offsets":
			if offs, ok = scanInts(val, 2); !ok {
				return "", nil, nil, false
			}
			haveOffs = true
		default:
			if bytes.IndexByte(key, '\\') >= 0 || strings.EqualFold(k, "dtype") || strings.EqualFold(k, "shape") || strings.EqualFold(k, "data_offsets") {
				return "", nil, nil, false // encoding/json would match it
			}
		}
		i = skipSpace(raw, end)
		if raw[i] == ',' {
			i = skipSpace(raw, i+1)
		}
	}
	return dtName, dims, offs, haveDType && haveShape && haveOffs
}

// scanInts reads a valid JSON array of at most limit plain integers that fit an int64.
func scanInts(val []byte, limit int) ([]int64, bool) {
	if val[0] != '[' {
		return nil, false
	}
	out := []int64{}
	i := skipSpace(val, 1)
	for val[i] != ']' {
		end := valueEnd(val, i)
		num := val[i:end]
		if len(out) == limit || bytes.ContainsAny(num, ".eE\"[{ntf") {
			return nil, false
		}
		v, err := strconv.ParseInt(string(num), 10, 64)
		if err != nil {
			return nil, false
		}
		out = append(out, v)
		i = skipSpace(val, end)
		if val[i] == ',' {
			i = skipSpace(val, i+1)
		}
	}
	return out, true
}
