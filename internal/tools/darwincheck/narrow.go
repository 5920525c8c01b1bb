package main

import (
	"go/ast"
	"go/types"
	"strings"
)

// macdriver's objc.Call[T] hands libffi a pointer to a Go value of type T for the
// result; for an integer result narrower than a register (BOOL, int32, ...) libffi
// writes a whole ffi_arg, 8 bytes, there, past a 1-byte bool's end. The generated
// wrappers under macos/ return through objc.Call too. checkNarrowResults reports every
// call of either kind in the module's own files; a BOOL is read through cgo instead
// (objc.Object.RespondsToSelector, or a C helper in a preamble).

const (
	macdriverPath = "github.com/progrium/macdriver/"
	objcPath      = macdriverPath + "objc"
)

// checkNarrowResults reports the narrow-result calls in files.
func (c *checker) checkNarrowResults(files []*ast.File, info *types.Info) {
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			fn := calledFunc(call.Fun, info)
			if fn == nil || fn.Pkg() == nil || !strings.HasPrefix(fn.Pkg().Path(), macdriverPath) {
				return true
			}
			pkg := fn.Pkg().Path()
			viaFFI := (pkg == objcPath && fn.Name() == "Call") ||
				(strings.HasPrefix(pkg, macdriverPath+"macos/") && !strings.HasPrefix(fn.Name(), "Has"))
			if !viaFFI {
				return true
			}
			tv, ok := info.Types[call]
			if !ok || !c.narrow(tv.Type) {
				return true
			}
			c.add(c.diagnostic(c.fset.Position(call.Pos()),
				"objc.Call result of type "+tv.Type.String()+" is narrower than a register: libffi writes 8 bytes there "+
					"(read a BOOL through cgo, e.g. objc.Object.RespondsToSelector or a C helper)"))
			return true
		})
	}
}

// calledFunc is the function or method a call's Fun names (through an instantiation
// such as objc.Call[bool]), or nil.
func calledFunc(fun ast.Expr, info *types.Info) *types.Func {
	for {
		switch e := fun.(type) {
		case *ast.ParenExpr:
			fun = e.X
			continue
		case *ast.IndexExpr:
			fun = e.X
			continue
		case *ast.IndexListExpr:
			fun = e.X
			continue
		case *ast.Ident:
			f, _ := info.Uses[e].(*types.Func)
			return f
		case *ast.SelectorExpr:
			f, _ := info.Uses[e.Sel].(*types.Func)
			return f
		}
		return nil
	}
}

// narrow reports whether t is a boolean or an integer of fewer than 8 bytes.
func (c *checker) narrow(t types.Type) bool {
	b, ok := t.Underlying().(*types.Basic)
	if !ok || b.Info()&(types.IsBoolean|types.IsInteger) == 0 {
		return false
	}
	return c.sizes.Sizeof(t) < 8
}
