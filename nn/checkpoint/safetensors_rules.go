package checkpoint

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// The reference implementation's rules that encoding/json alone does not enforce: a
// header of valid UTF-8 (no half surrogate pairs in its escapes either), and tensors
// that tile the data section.

// loneSurrogateAt is the offset of the first \u escape in b that encodes half of a
// UTF-16 surrogate pair without the other half (-1 if none). encoding/json decodes one
// to U+FFFD, silently renaming the tensor; the reference refuses it.
func loneSurrogateAt(b []byte) int {
	if !bytes.Contains(b, []byte(`\u`)) {
		return -1
	}
	hex := func(i int) (rune, bool) { // the \uXXXX escape at b[i]
		if i+6 > len(b) || b[i] != '\\' || b[i+1] != 'u' {
			return 0, false
		}
		v, err := strconv.ParseUint(string(b[i+2:i+6]), 16, 16)
		return rune(v), err == nil
	}
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			continue
		}
		r, ok := hex(i)
		switch {
		case !ok:
			i++ // another escape (\\, \", ...): skip its second byte
		case r >= 0xD800 && r < 0xDC00:
			if lo, ok := hex(i + 6); !ok || lo < 0xDC00 || lo > 0xDFFF {
				return i
			}
			i += 11
		case r >= 0xDC00 && r <= 0xDFFF:
			return i
		default:
			i += 5
		}
	}
	return -1
}

// invalidUTF8At is the offset of the first byte of b that is not valid UTF-8.
func invalidUTF8At(b []byte) int {
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if r == utf8.RuneError && n <= 1 {
			return i
		}
		i += n
	}
	return len(b)
}

// checkLayout applies the reference's layout rule: taken in offset order, every tensor
// begins where the previous one ended and the last ends where the data section does.
// So tensors neither overlap nor leave gaps, and no bytes trail the last one (where a
// writer's bug or a hidden payload would otherwise go unnoticed).
func (s *Safetensors) checkLayout(dataLen int64) error {
	type span struct {
		begin, end int64
		name       string
	}
	byStart := make([]span, 0, len(s.tensors))
	for _, name := range s.names { // name order: often offset order already
		t := s.tensors[name]
		byStart = append(byStart, span{t.Begin, t.End, t.Name})
	}
	byOffset := func(a, b span) int {
		switch {
		case a.begin != b.begin:
			return cmp.Compare(a.begin, b.begin)
		case a.end != b.end:
			return cmp.Compare(a.end, b.end)
		}
		return strings.Compare(a.name, b.name)
	}
	if !slices.IsSortedFunc(byStart, byOffset) {
		slices.SortFunc(byStart, byOffset)
	}
	var pos int64 // where the tensors so far end
	last := ""    // the tensor ending at pos
	for _, cur := range byStart {
		switch {
		case cur.begin < pos:
			prev := s.tensors[last]
			return &FormatError{File: s.file, Tensor: cur.name, Reason: fmt.Sprintf(
				"data_offsets [%d, %d] overlap tensor %s [%d, %d]", cur.begin, cur.end, prev.Name, prev.Begin, prev.End)}
		case cur.begin > pos:
			after := "the start of the data section"
			if last != "" {
				after = "tensor " + last
			}
			return &FormatError{File: s.file, Tensor: cur.name, Reason: fmt.Sprintf(
				"data_offsets [%d, %d] leave bytes [%d, %d] after %s unused (tensors must be contiguous)", cur.begin, cur.end, pos, cur.begin, after)}
		}
		pos, last = cur.end, cur.name
	}
	if pos != dataLen {
		return &FormatError{File: s.file, Reason: fmt.Sprintf(
			"%d bytes after the last tensor's data (tensors end at %d of the %d-byte data section)", dataLen-pos, pos, dataLen)}
	}
	return nil
}
