// Command genparams writes kernels/prelude_params.metal: the MSL struct of every Go
// struct the kernels send with setBytes, so that each is declared once, in Go.
//
// A struct is a parameter struct when an Encode sends it with mslPack (kernels/params.go):
// genparams type-checks the package, takes every type argument of mslPack and the
// structs nested in them, and writes each as an MSL struct named as the Go type with
// its first letter upper-cased (normConsts -> NormConsts, QuantParams -> QuantParams).
// A field keeps its Go name unless its `msl:"..."` tag spells it otherwise (the tag may
// change only case and underscores: XStride -> x_stride). int, int32 and bool are MSL
// int, uint32 is uint, float32 and float64 are float; arrays keep their length.
//
// It refuses two structs of one name: two Go types that map to one MSL name, an MSL
// name that is also another Go type of the package (NormParams and the norm's
// constants were once both "NormParams"), and a generated name that a hand-written
// .metal file also declares.
//
// Usage, from kernels/ (`go generate ./kernels` runs it):
//
//	go run ./internal/genparams          # write prelude_params.metal
//	go run ./internal/genparams -check   # fail if it is stale
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
)

func main() {
	dir := flag.String("dir", ".", "the kernels package's directory")
	check := flag.Bool("check", false, "only report whether the file is up to date")
	flag.Parse()
	if err := run(*dir, *check); err != nil {
		fmt.Fprintln(os.Stderr, "genparams:", err)
		os.Exit(1)
	}
}

func run(dir string, check bool) error {
	src, err := generate(dir)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, OutFile)
	if check {
		old, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if !bytes.Equal(old, src) {
			return fmt.Errorf("%w: run `go generate ./kernels`", ErrStale)
		}
		return nil
	}
	return os.WriteFile(path, src, 0o644)
}
