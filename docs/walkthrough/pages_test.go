package walkthrough_test

import (
	"bufio"
	"fmt"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// The pages mark what they quote from this package:
//
//	<!-- output: Example_name -->   the next fenced block is that example's output
//	<!-- code: file_test.go -->     the next fenced block is lines of that file, in order
//
// so that a page can never show a figure its example does not print.
const (
	outputMark = "<!-- output: "
	codeMark   = "<!-- code: "
)

// quote is one marked fenced block of a page.
type quote struct {
	page, kind, target string
	line               int
	body               []string
}

// pageQuotes returns the marked blocks of a Markdown page.
func pageQuotes(t *testing.T, path string) []quote {
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	var out []quote
	var cur *quote
	inBlock := false
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		l := sc.Text()
		switch {
		case inBlock && strings.HasPrefix(l, "```"):
			inBlock = false
			if cur != nil {
				out = append(out, *cur)
				cur = nil
			}
		case inBlock:
			if cur != nil {
				cur.body = append(cur.body, l)
			}
		case strings.HasPrefix(l, "```"):
			inBlock = true
		case strings.HasPrefix(l, outputMark), strings.HasPrefix(l, codeMark):
			require.Nil(t, cur, "%s:%d: a mark with no fenced block after the previous one", path, n)
			kind, rest, _ := strings.Cut(strings.TrimPrefix(l, "<!-- "), ": ")
			cur = &quote{page: filepath.Base(path), kind: kind, target: strings.TrimSuffix(rest, " -->"), line: n}
		}
	}
	require.NoError(t, sc.Err())
	require.Nil(t, cur, "%s: a mark with no fenced block", path)
	return out
}

// examples parses this package's test files and returns their examples by function
// name, and each file's lines.
func examples(t *testing.T) (map[string]*doc.Example, map[string][]string) {
	fset := token.NewFileSet()
	names, err := filepath.Glob("*_test.go")
	require.NoError(t, err)
	exs := make(map[string]*doc.Example)
	lines := make(map[string][]string)
	for _, name := range names {
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		require.NoError(t, err)
		for _, ex := range doc.Examples(f) {
			exs["Example"+ex.Name] = ex
		}
		b, err := os.ReadFile(name)
		require.NoError(t, err)
		lines[name] = strings.Split(string(b), "\n")
	}
	return exs, lines
}

// TestPagesQuoteExamples checks every page against the examples: an output block must
// equal the example's checked output, a code block's lines must appear in order in its
// file (lines of only "// ..." mark an elision), every page quotes at least one
// output, and every example is quoted by some page.
func TestPagesQuoteExamples(t *testing.T) {
	exs, files := examples(t)
	pages, err := filepath.Glob("../[0-9][0-9]-*.md")
	require.NoError(t, err)
	require.NotEmpty(t, pages)
	quoted := make(map[string]bool)
	for _, p := range pages {
		outputs := 0
		for _, q := range pageQuotes(t, p) {
			where := fmt.Sprintf("%s:%d", q.page, q.line)
			switch q.kind {
			case "output":
				ex, ok := exs[q.target]
				require.True(t, ok, "%s: no example %s", where, q.target)
				require.NotEmpty(t, ex.Output, "%s: %s checks no output", where, q.target)
				require.Equal(t, strings.TrimSpace(ex.Output), strings.TrimSpace(strings.Join(q.body, "\n")),
					"%s: the output of %s differs from what the page shows", where, q.target)
				quoted[q.target] = true
				outputs++
			case "code":
				src, ok := files[q.target]
				require.True(t, ok, "%s: no file %s", where, q.target)
				requireInOrder(t, where, q.target, q.body, src)
			default:
				t.Fatalf("%s: unknown mark %q", where, q.kind)
			}
		}
		require.NotZero(t, outputs, "%s quotes no example output", p)
	}
	for name := range exs {
		require.True(t, quoted[name], "no page shows the output of %s", name)
	}
}

// requireInOrder checks that the non-blank lines of excerpt appear in src in order
// (compared without leading and trailing space); "// ..." lines are skipped.
func requireInOrder(t *testing.T, where, file string, excerpt, src []string) {
	t.Helper()
	i := 0
	for _, l := range excerpt {
		l = strings.TrimSpace(l)
		if l == "" || l == "// ..." {
			continue
		}
		for i < len(src) && strings.TrimSpace(src[i]) != l {
			i++
		}
		require.Less(t, i, len(src), "%s: line %q is not in %s (or not in this order)", where, l, file)
		i++
	}
}
