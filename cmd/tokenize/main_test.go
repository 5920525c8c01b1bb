package main

import (
	"bytes"
	"strings"
	"testing"
)

const qwen3 = "../../tokenizer/testdata/qwen3/tokenizer.json.gz"

func tokenize(stdin string, args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, strings.NewReader(stdin), &out, &errb)
	return code, out.String(), errb.String()
}

func TestEncodeDecode(t *testing.T) {
	code, out, errs := tokenize("Hello, world!", "-tokenizer", qwen3)
	if code != 0 || out != "[9707,11,1879,0]\n" || errs != "" {
		t.Fatalf("encode: %d %q %q", code, out, errs)
	}
	code, out, errs = tokenize("[9707, 11, 1879, 0, 151645]", "-tokenizer", qwen3, "-decode")
	if code != 0 || out != "Hello, world!<|im_end|>" || errs != "" {
		t.Fatalf("decode: %d %q %q", code, out, errs)
	}
	code, out, _ = tokenize("", "-tokenizer", qwen3)
	if code != 0 || out != "[]\n" {
		t.Fatalf("empty: %d %q", code, out)
	}
}

func TestErrors(t *testing.T) {
	cases := []struct {
		stdin string
		args  []string
		code  int
		out   string
		err   string
	}{
		{"", nil, exitUsage, "", "tokenize: usage: tokenize -tokenizer PATH [-decode] < input\n"},
		{"", []string{"-tokenizer", "/nonexistent"}, exitNoInput, "", "tokenize: tokenizer: open /nonexistent: no such file or directory\n"},
		{"x", []string{"-tokenizer", "main.go"}, exitNoInput, "", "tokenize: main.go: not a tokenizer.json: not a JSON object\n"},
		{"[1, 2", []string{"-tokenizer", qwen3, "-decode"}, exitData, "", "tokenize: -decode wants a JSON array of ids: unexpected end of JSON input\n"},
		{"[1, 999999]", []string{"-tokenizer", qwen3, "-decode"}, exitData, "", "tokenize: tokenizer: id 999999 (at 1) is not a token (vocabulary size 151669)\n"},
		{"a\xffb", []string{"-tokenizer", qwen3}, 0, "[64,5691,65]\n", "tokenize: note: the input is not valid UTF-8: 1 invalid byte(s) replaced with U+FFFD\n"},
	}
	for _, c := range cases {
		code, out, errs := tokenize(c.stdin, c.args...)
		if code != c.code || out != c.out || errs != c.err {
			t.Errorf("%q %v: got %d %q %q\nwant %d %q %q", c.stdin, c.args, code, out, errs, c.code, c.out, c.err)
		}
	}
}
