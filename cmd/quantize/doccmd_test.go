package main

import (
	"errors"
	"flag"
	"io"
	"testing"

	"github.com/ingotml/ingot/internal/doccmd"
)

// TestDocumentedCommandsParse: every quantize command line the README and the docs pages
// show parses with the real flags (names and value syntax).
func TestDocumentedCommandsParse(t *testing.T) {
	doccmd.Check(t, "../..", "quantize", 2, func(args []string) bool {
		_, err := parseFlags(args, io.Discard)
		return errors.Is(err, flag.ErrHelp)
	})
}
