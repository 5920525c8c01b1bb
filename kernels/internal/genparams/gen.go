package main

import (
	"errors"
	"fmt"
	"go/ast"
	"go/build"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strings"
)

// OutFile is the generated file, in the kernels directory; prelude.metal includes it.
const OutFile = "prelude_params.metal"

// packer is the generic function whose type arguments are the parameter structs.
const packer = "mslPack"

// ErrStale is returned by -check when the file on disk differs from the generated one.
var ErrStale = errors.New(OutFile + " is stale")

// mslStruct is one generated struct.
type mslStruct struct {
	goName, name, file string // Go type, MSL name, the Go file declaring it
	fields             []mslField
	deps               []string // MSL names of the structs its fields hold
}

// mslField is one field: "int k_strides[3]; // comment".
type mslField struct {
	typ, name, dims, comment string
}

// gen holds one run over a package.
type gen struct {
	fset     *token.FileSet
	pkg      *types.Package
	comments map[token.Pos]string // a struct field's line comment, by its first name
	byType   map[*types.TypeName]*mslStruct
	byName   map[string]*mslStruct
}

// generate returns the text of OutFile for the kernels package in dir.
func generate(dir string) ([]byte, error) {
	g, roots, err := load(dir)
	if err != nil {
		return nil, err
	}
	for _, t := range roots {
		if _, err := g.structOf(t.typ, t.at); err != nil {
			return nil, err
		}
	}
	if err := g.checkNames(dir); err != nil {
		return nil, err
	}
	return g.render(), nil
}

// root is a type argument of packer and where it was sent.
type root struct {
	typ types.Type
	pos token.Pos
	at  string
}

// load type-checks the package in dir (its files for this platform, tests left out)
// and returns the type arguments of every call of packer, in source order.
func load(dir string) (*gen, []root, error) {
	bp, err := build.ImportDir(dir, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("reading %s: %w", dir, err)
	}
	g := &gen{fset: token.NewFileSet(), comments: map[token.Pos]string{},
		byType: map[*types.TypeName]*mslStruct{}, byName: map[string]*mslStruct{}}
	var files []*ast.File
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(g.fset, filepath.Join(dir, name), nil, parser.ParseComments)
		if err != nil {
			return nil, nil, err
		}
		files = append(files, f)
		ast.Inspect(f, func(n ast.Node) bool {
			if st, ok := n.(*ast.StructType); ok {
				for _, fl := range st.Fields.List {
					if fl.Comment != nil && len(fl.Names) > 0 {
						g.comments[fl.Names[0].Pos()] = strings.TrimSpace(fl.Comment.Text())
					}
				}
			}
			return true
		})
	}
	conf := types.Config{Importer: importer.ForCompiler(g.fset, "source", nil)}
	info := &types.Info{Instances: map[*ast.Ident]types.Instance{}, Uses: map[*ast.Ident]types.Object{}}
	if g.pkg, err = conf.Check(bp.ImportPath, g.fset, files, info); err != nil {
		return nil, nil, fmt.Errorf("type-checking %s: %w", dir, err)
	}
	pack, ok := g.pkg.Scope().Lookup(packer).(*types.Func)
	if !ok {
		return nil, nil, fmt.Errorf("%s: no func %s", bp.Name, packer)
	}
	var roots []root
	for id, inst := range info.Instances {
		if info.Uses[id] == pack {
			roots = append(roots, root{inst.TypeArgs.At(0), id.Pos(), g.pos(id.Pos())})
		}
	}
	if len(roots) == 0 {
		return nil, nil, fmt.Errorf("%s: no call of %s", bp.Name, packer)
	}
	sort.Slice(roots, func(i, j int) bool { return roots[i].pos < roots[j].pos }) // source order
	return g, roots, nil
}

// pos is a position as file:line, the file's base name only.
func (g *gen) pos(p token.Pos) string {
	at := g.fset.Position(p)
	return fmt.Sprintf("%s:%d", filepath.Base(at.Filename), at.Line)
}

// MSLName is the MSL name of a Go type: its name with the first letter upper-cased.
func MSLName(goName string) string {
	return strings.ToUpper(goName[:1]) + goName[1:]
}

// structOf adds the struct t (a named struct type of the package) and the structs its
// fields hold, and returns its MSL name; at says where t was sent, for errors.
func (g *gen) structOf(t types.Type, at string) (string, error) {
	n, ok := types.Unalias(t).(*types.Named)
	if !ok || n.Obj().Pkg() != g.pkg {
		return "", fmt.Errorf("%s: %s sends %s, which is not a named struct of the package", at, packer, t)
	}
	st, ok := n.Underlying().(*types.Struct)
	if !ok {
		return "", fmt.Errorf("%s: %s sends %s, which is not a struct", at, packer, t)
	}
	if s := g.byType[n.Obj()]; s != nil {
		return s.name, nil
	}
	s := &mslStruct{goName: n.Obj().Name(), name: MSLName(n.Obj().Name()),
		file: filepath.Base(g.fset.Position(n.Obj().Pos()).Filename)}
	if other := g.byName[s.name]; other != nil {
		return "", fmt.Errorf("MSL struct %s would be both %s (%s) and %s (%s)", s.name, other.goName, other.file, s.goName, s.file)
	}
	g.byType[n.Obj()], g.byName[s.name] = s, s
	for i := 0; i < st.NumFields(); i++ {
		f := st.Field(i)
		where := s.goName + "." + f.Name()
		if f.Embedded() {
			return "", fmt.Errorf("%s: an embedded field cannot be an MSL parameter", where)
		}
		name, err := fieldName(where, f.Name(), reflect.StructTag(st.Tag(i)).Get("msl"))
		if err != nil {
			return "", err
		}
		typ, dims, err := g.fieldType(f.Type(), where)
		if err != nil {
			return "", err
		}
		if g.byName[typ] != nil {
			s.deps = append(s.deps, typ)
		}
		s.fields = append(s.fields, mslField{typ: typ, name: name, dims: dims, comment: g.comments[f.Pos()]})
	}
	if len(s.fields) == 0 {
		return "", fmt.Errorf("%s: a struct without fields cannot be an MSL parameter", s.goName)
	}
	return s.name, nil
}

var ident = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// fieldName is a field's MSL name: its tag, which may only respell the Go name (case
// and underscores), or the Go name.
func fieldName(where, goName, tag string) (string, error) {
	if tag == "" {
		return goName, nil
	}
	norm := func(s string) string { return strings.ToLower(strings.ReplaceAll(s, "_", "")) }
	if !ident.MatchString(tag) || norm(tag) != norm(goName) {
		return "", fmt.Errorf("%s: tag msl:%q is not a spelling of %s (only case and underscores may differ)", where, tag, goName)
	}
	return tag, nil
}

// fieldType is the MSL type of a field of Go type t: the base type and the array
// dimensions ("[3]").
func (g *gen) fieldType(t types.Type, where string) (typ, dims string, err error) {
	switch u := types.Unalias(t).(type) {
	case *types.Basic:
		switch u.Kind() {
		case types.Int, types.Int32, types.Bool:
			return "int", "", nil
		case types.Uint32:
			return "uint", "", nil
		case types.Float32, types.Float64:
			return "float", "", nil
		}
	case *types.Array:
		typ, dims, err := g.fieldType(u.Elem(), where)
		return typ, fmt.Sprintf("[%d]", u.Len()) + dims, err
	case *types.Named:
		if _, ok := u.Underlying().(*types.Struct); ok {
			name, err := g.structOf(u, where)
			return name, "", err
		}
		return g.fieldType(u.Underlying(), where)
	}
	return "", "", fmt.Errorf("%s: %s cannot be an MSL parameter (int, int32, uint32, bool, float32, float64, arrays and structs of them)", where, t)
}

// handWritten matches a struct declared in a .metal file.
var handWritten = regexp.MustCompile(`(?m)^\s*struct\s+(\w+)\s*\{`)

// checkNames refuses a generated name that another Go type of the package has, or
// that a hand-written .metal file in dir declares.
func (g *gen) checkNames(dir string) error {
	for _, s := range g.sorted() {
		if obj := g.pkg.Scope().Lookup(s.name); obj != nil && obj.Name() != s.goName {
			return fmt.Errorf("MSL struct %s (from %s, %s) is also the Go name %s (%s): rename one of them",
				s.name, s.goName, s.file, obj.Name(), g.pos(obj.Pos()))
		}
	}
	metal, err := filepath.Glob(filepath.Join(dir, "*.metal"))
	if err != nil {
		return err
	}
	for _, path := range metal {
		if filepath.Base(path) == OutFile {
			continue
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range handWritten.FindAllSubmatch(src, -1) {
			if s := g.byName[string(m[1])]; s != nil {
				return fmt.Errorf("%s declares struct %s, which is generated from %s (%s): remove it there",
					filepath.Base(path), s.name, s.goName, s.file)
			}
		}
	}
	return nil
}

// sorted returns the structs by MSL name.
func (g *gen) sorted() []*mslStruct {
	out := make([]*mslStruct, 0, len(g.byName))
	for _, s := range g.byName {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// header is the file's first lines; Go's generated-code convention is its first line.
const header = `// Code generated by kernels/internal/genparams from the Go parameter structs; DO NOT EDIT.
//
// The MSL struct of every Go struct an Encode sends with mslPack (kernels/params.go),
// each under the name of its Go declaration. prelude.metal includes this file. To
// change one, change the Go struct and run ` + "`go generate ./kernels`" + `.
`

// render writes the structs by name, each after the structs its fields hold.
func (g *gen) render() []byte {
	var b strings.Builder
	b.WriteString(header)
	done := map[string]bool{}
	var emit func(s *mslStruct)
	emit = func(s *mslStruct) {
		if done[s.name] {
			return
		}
		done[s.name] = true
		for _, d := range s.deps {
			emit(g.byName[d])
		}
		fmt.Fprintf(&b, "\n// %s (%s)\nstruct %s {\n", s.goName, s.file, s.name)
		for _, f := range s.fields {
			fmt.Fprintf(&b, "    %s %s%s;", f.typ, f.name, f.dims)
			if f.comment != "" {
				fmt.Fprintf(&b, " // %s", f.comment)
			}
			b.WriteByte('\n')
		}
		b.WriteString("};\n")
	}
	for _, s := range g.sorted() {
		emit(s)
	}
	return []byte(b.String())
}
