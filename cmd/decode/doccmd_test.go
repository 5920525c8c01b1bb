package main

import (
	"errors"
	"flag"
	"io"
	"testing"

	"github.com/ingotml/ingot/internal/doccmd"
)

// TestDocumentedCommandsParse parses every decode command line the README and the
// docs pages show with the real flags (names and value syntax; a trailing -h stops
// the parse before the run's own checks, which need the files the pages name).
func TestDocumentedCommandsParse(t *testing.T) {
	cmds, err := doccmd.Find("../..", "decode")
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) < 10 {
		t.Fatalf("found only %d documented decode commands: is the search broken?", len(cmds))
	}
	for _, c := range cmds {
		_, err := parseFlags(append(c.Args, "-h"), io.Discard)
		if !errors.Is(err, flag.ErrHelp) {
			t.Errorf("%s:%d: decode %q: %v", c.Page, c.Line, c.Args, err)
		}
	}
}
