// Command tokenize turns text into token ids and back with a checkpoint's
// tokenizer.json, as llama.cpp's llama-tokenize does:
//
//	tokenize -tokenizer PATH < text.txt        # prints the ids as one JSON array
//	tokenize -tokenizer PATH -decode < ids.json  # reads a JSON array, prints the text
//
// PATH is a tokenizer.json (.gz too) or a checkpoint directory holding one. Input is
// read from stdin, at most 256 MB. Text that is not valid UTF-8 is encoded with each
// bad byte replaced by U+FFFD, and a note on stderr says how many. Exit codes: 0 done,
// 64 bad command line, 65 bad input (not a JSON array of ids, an unknown id, input too
// large), 66 the tokenizer cannot be read or is not one.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/ingotml/ingot/tokenizer"
)

const (
	exitUsage   = 64 // EX_USAGE
	exitData    = 65 // EX_DATAERR
	exitNoInput = 66 // EX_NOINPUT
)

// maxInput bounds stdin, so a runaway pipe is a clear error, not an OOM.
const maxInput = 256 << 20

func main() { os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr)) }

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("tokenize", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("tokenizer", "", "tokenizer.json (or .json.gz), or a checkpoint directory holding tokenizer.json")
	decode := fs.Bool("decode", false, "read a JSON array of ids from stdin and print their text")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return exitUsage
	}
	if *path == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "tokenize: usage: tokenize -tokenizer PATH [-decode] < input")
		return exitUsage
	}
	tok, err := tokenizer.Load(*path)
	if err != nil {
		fmt.Fprintf(stderr, "tokenize: %v\n", err)
		return exitNoInput
	}
	in, err := io.ReadAll(io.LimitReader(stdin, maxInput+1))
	if err != nil {
		fmt.Fprintf(stderr, "tokenize: reading stdin: %v\n", err)
		return exitData
	}
	if len(in) > maxInput {
		fmt.Fprintf(stderr, "tokenize: stdin is larger than %d MB\n", maxInput>>20)
		return exitData
	}
	w := bufio.NewWriter(stdout)
	defer w.Flush()
	if *decode {
		var ids []int32
		if err := json.Unmarshal(in, &ids); err != nil {
			fmt.Fprintf(stderr, "tokenize: -decode wants a JSON array of ids: %v\n", err)
			return exitData
		}
		text, err := tok.Decode(ids)
		if err != nil {
			fmt.Fprintf(stderr, "tokenize: %v\n", err)
			return exitData
		}
		w.WriteString(text)
		return 0
	}
	s := string(in)
	if n := tokenizer.InvalidBytes(s); n > 0 {
		fmt.Fprintf(stderr, "tokenize: note: the input is not valid UTF-8: %d invalid byte(s) replaced with U+FFFD\n", n)
	}
	ids := tok.Encode(s)
	w.WriteByte('[')
	for i, id := range ids {
		if i > 0 {
			w.WriteByte(',')
		}
		fmt.Fprint(w, id)
	}
	w.WriteString("]\n")
	return 0
}
