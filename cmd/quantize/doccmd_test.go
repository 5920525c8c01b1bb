package main

import (
	"errors"
	"flag"
	"io"
	"testing"

	"github.com/ingotml/ingot/internal/doccmd"
)

// TestDocumentedCommandsParse parses every quantize command line the README and the
// docs pages show with the real flags (a trailing -h stops before any file is read).
func TestDocumentedCommandsParse(t *testing.T) {
	cmds, err := doccmd.Find("../..", "quantize")
	if err != nil {
		t.Fatal(err)
	}
	if len(cmds) < 2 {
		t.Fatalf("found only %d documented quantize commands: is the search broken?", len(cmds))
	}
	for _, c := range cmds {
		_, err := parseFlags(append(c.Args, "-h"), io.Discard)
		if !errors.Is(err, flag.ErrHelp) {
			t.Errorf("%s:%d: quantize %q: %v", c.Page, c.Line, c.Args, err)
		}
	}
}
