package main

import (
	"errors"
	"flag"
	"io"
	"testing"

	"github.com/ingotml/ingot/internal/doccmd"
)

// TestDocumentedCommandsParse: every decode command line the README and the docs pages
// show parses with the real flags (names and value syntax).
func TestDocumentedCommandsParse(t *testing.T) {
	doccmd.Check(t, "../..", "decode", 10, func(args []string) bool {
		_, err := parseFlags(args, io.Discard)
		return errors.Is(err, flag.ErrHelp)
	})
}
