package main

import (
	"fmt"
	"go/ast"
	"go/token"
	"regexp"
	"strconv"
	"strings"
)

// Cgo is not run here (no macOS SDK), so the C side of each cgo file is checked as
// far as text allows: every C.name the file's Go code uses must be cgo's own, a C
// type every preamble gets from the standard headers, or a name its own preamble
// declares (cgo resolves C.name in the preamble of the file that uses it); and a call
// of a function the preamble defines must pass as many arguments as it takes. The
// macOS CI job compiles the preambles for real.

// cgoKnown are names C.x may use without the preamble declaring them: cgo's helpers
// and the C types of <stdint.h>, <stddef.h> and the base language.
var cgoKnown = map[string]bool{}

func init() {
	for _, n := range strings.Fields(`CString CBytes GoString GoStringN GoBytes free malloc
		char schar uchar short ushort int uint long ulong longlong ulonglong float double
		size_t ssize_t uintptr_t intptr_t int8_t uint8_t int16_t uint16_t int32_t uint32_t
		int64_t uint64_t bool`) {
		cgoKnown[n] = true
	}
}

// cgoFunc matches a function definition or declaration in a preamble: its name and
// parameter list.
var cgoFunc = regexp.MustCompile(`(?m)^[A-Za-z_][\w\s\*]*?\b([A-Za-z_]\w*)\s*\(([^)]*)\)\s*[{;]`)

// checkPreambles reports the C names and calls of files that their preambles do not
// back.
func (c *checker) checkPreambles(files []*ast.File) {
	for _, f := range files {
		pre, ok := preamble(f)
		if !ok {
			continue
		}
		arity := map[string]int{}
		for _, m := range cgoFunc.FindAllStringSubmatch(pre, -1) {
			params := strings.TrimSpace(m[2])
			n := 0
			if params != "" && params != "void" {
				n = strings.Count(params, ",") + 1
			}
			arity[m[1]] = n
		}
		declared := regexp.MustCompile(`[A-Za-z_]\w*`).FindAllString(pre, -1)
		words := make(map[string]bool, len(declared))
		for _, w := range declared {
			words[w] = true
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch e := n.(type) {
			case *ast.CallExpr:
				if name, ok := cName(e.Fun); ok {
					if want, ok := arity[name]; ok && want != len(e.Args) {
						c.add(c.diagnostic(c.fset.Position(e.Pos()),
							fmt.Sprintf("C.%s takes %d arguments in the preamble; called with %d", name, want, len(e.Args))))
					}
				}
			case *ast.SelectorExpr:
				if name, ok := cName(e); ok && !cgoKnown[name] && !words[name] {
					c.add(c.diagnostic(c.fset.Position(e.Pos()),
						fmt.Sprintf("C.%s is not declared in this file's cgo preamble", name)))
				}
			}
			return true
		})
	}
}

// cName is x's name when e is C.x.
func cName(e ast.Expr) (string, bool) {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok {
		return "", false
	}
	id, ok := sel.X.(*ast.Ident)
	if !ok || id.Name != "C" {
		return "", false
	}
	return sel.Sel.Name, true
}

// preamble is the text of the comment above a file's import "C", without the
// comment markers.
func preamble(f *ast.File) (string, bool) {
	for _, d := range f.Decls {
		g, ok := d.(*ast.GenDecl)
		if !ok || g.Tok != token.IMPORT {
			continue
		}
		for _, s := range g.Specs {
			is := s.(*ast.ImportSpec)
			if p, _ := strconv.Unquote(is.Path.Value); p != "C" {
				continue
			}
			doc := is.Doc
			if doc == nil {
				doc = g.Doc
			}
			if doc == nil {
				return "", true
			}
			return doc.Text(), true
		}
	}
	return "", false
}
