// Package doccmd finds the command lines that the project's documentation shows, so
// that each command's tests can check them against its real flags: a page that
// shows a flag the command no longer has fails a test, not a reader.
package doccmd

import (
	"bufio"
	"os"
	"path/filepath"
	"strings"
)

// Pages are the documentation files searched, relative to the repository root.
var Pages = []string{"README.md", "docs/*.md", "cmd/*/README.md"}

// Command is one command line shown in a page.
type Command struct {
	Page string   // the page, relative to the root
	Line int      // its line number there
	Args []string // the arguments after the command's name
}

// Find returns every command line of the tool (e.g. "decode") that the pages under
// root show, as `go run ./cmd/TOOL ...` or a built `./TOOL ...`, with a leading
// "$ " prompt allowed. The arguments end at a shell operator (a pipe, a redirection,
// `;`, `&&`) or a `#` comment.
func Find(root, tool string) ([]Command, error) {
	var out []Command
	for _, pat := range Pages {
		files, err := filepath.Glob(filepath.Join(root, pat))
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			cmds, err := findIn(f, tool)
			if err != nil {
				return nil, err
			}
			rel, _ := filepath.Rel(root, f)
			for i := range cmds {
				cmds[i].Page = rel
			}
			out = append(out, cmds...)
		}
	}
	return out, nil
}

func findIn(path, tool string) ([]Command, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Command
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		line = strings.TrimPrefix(line, "$ ")
		line = strings.Trim(line, "`")
		for _, prefix := range []string{"go run ./cmd/" + tool + " ", "./" + tool + " "} {
			if i := strings.Index(line, prefix); i >= 0 && (i == 0 || strings.HasSuffix(line[:i], "&& ")) {
				out = append(out, Command{Line: n, Args: split(line[i+len(prefix):])})
				break
			}
		}
	}
	return out, sc.Err()
}

// split cuts a shell line into words (single and double quotes, no escapes inside
// single quotes), stopping at an operator, a comment or a line continuation (the
// continued line's flags are not checked) or a usage synopsis's first optional "[...]".
func split(s string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	flush := func() {
		if inWord {
			words = append(words, cur.String())
		}
		cur.Reset()
		inWord = false
	}
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			flush()
		case r == '|' || r == ';' || r == '&' || !inWord && (r == '#' || r == '>' || r == '<'):
			flush()
			return words
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	flush()
	// "2>/dev/null" starts as a word "2>..." : drop redirections that slipped in.
	for i, w := range words {
		if w == "\\" || strings.HasPrefix(w, "[") || strings.HasPrefix(w, "2>") || strings.HasPrefix(w, "1>") { // a continuation or a redirection
			return words[:i]
		}
	}
	return words
}

// TB is the part of testing.TB that Check uses.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
}

// Check finds the tool's documented command lines under root (at least min of them,
// so a broken search fails) and reports each one that parse refuses. parse gets the
// arguments with a trailing "-h", which stops a flag parse before the command's own
// checks (which need the files the pages name), and returns whether they parsed.
func Check(t TB, root, tool string, min int, parse func(args []string) bool) {
	t.Helper()
	cmds, err := Find(root, tool)
	if err != nil {
		t.Fatalf("%v", err)
	}
	if len(cmds) < min {
		t.Fatalf("found only %d documented %s commands (want %d or more): is the search broken?", len(cmds), tool, min)
	}
	for _, c := range cmds {
		if !parse(append(c.Args, "-h")) {
			t.Errorf("%s:%d: %s %q does not parse", c.Page, c.Line, tool, c.Args)
		}
	}
}
