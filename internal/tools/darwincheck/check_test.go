package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// probeModule copies testdata/mod (a module that requires macdriver) to a
// temporary directory and sets up the go command to resolve it from the
// module cache only.
func probeModule(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	// The probe resolves macdriver offline; fetch it into the module cache
	// first (a no-op once there), at the version this module's go.mod names.
	if out, err := exec.Command("go", "mod", "download", "github.com/progrium/macdriver").CombinedOutput(); err != nil {
		t.Fatalf("go mod download github.com/progrium/macdriver: %v\n%s", err, out)
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join("testdata", "mod"))); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOFLAGS", "-mod=mod")
	t.Setenv("GOPROXY", "off")
	t.Setenv("GOWORK", "off")
	return dir
}

func TestCheckCorrectDarwinFilePasses(t *testing.T) {
	dir := probeModule(t)
	res := mustCheck(t, dir, "./good")
	// good_other.go holds a type error but is not part of the darwin build.
	if len(res.Diagnostics) != 0 {
		t.Fatalf("diagnostics for a correct package: %v", res.Diagnostics)
	}
	// The package, its test variant, macdriver's packages and std.
	if res.Packages < 50 {
		t.Fatalf("checked %d packages, want the dependencies too (> 50)", res.Packages)
	}
}

func TestCheckReportsUnknownMacdriverMethod(t *testing.T) {
	dir := probeModule(t)
	res := mustCheck(t, dir, "./bad")
	wantDiagnostics(t, res, []Diagnostic{{
		File:    filepath.Join("bad", "bad_darwin.go"),
		Line:    10,
		Message: "dev.NewBufferWithLength undefined (type metal.DeviceWrapper has no field or method NewBufferWithLength)",
	}})
	const want = "bad/bad_darwin.go:10: dev.NewBufferWithLength undefined (type metal.DeviceWrapper has no field or method NewBufferWithLength)"
	if got := res.Diagnostics[0].String(); got != want {
		t.Fatalf("String() = %q, want %q", got, want)
	}
}

func TestCheckReportsErrorInDarwinTest(t *testing.T) {
	dir := probeModule(t)
	res := mustCheck(t, dir, "./...")
	wantDiagnostics(t, res, []Diagnostic{
		{
			File:    filepath.Join("bad", "bad_darwin.go"),
			Line:    10,
			Message: "dev.NewBufferWithLength undefined (type metal.DeviceWrapper has no field or method NewBufferWithLength)",
		},
		{
			File:    filepath.Join("badtest", "badtest_darwin_test.go"),
			Line:    8,
			Message: "cannot use Two() (value of type int) as string value in variable declaration",
		},
		{File: filepath.Join("cgopre", "cgopre_darwin.go"), Line: 22, Message: "C.ingot_two takes 2 arguments in the preamble; called with 1"},
		{File: filepath.Join("cgopre", "cgopre_darwin.go"), Line: 25, Message: "C.ingot_three is not declared in this file's cgo preamble"},
		{File: filepath.Join("narrow", "narrow_darwin.go"), Line: 14, Message: "objc.Call result of type bool" + narrowMsg},
		{File: filepath.Join("narrow", "narrow_darwin.go"), Line: 19, Message: "objc.Call result of type bool" + narrowMsg},
	})
}

func TestCheckBadPatterns(t *testing.T) {
	dir := probeModule(t)
	res := mustCheck(t, dir, "./nothing/...")
	wantDiagnostics(t, res, []Diagnostic{{
		Message: "pattern ./nothing/...: lstat ./nothing/: no such file or directory",
	}})

	_, err := Check(dir, []string{"example.com/darwinprobe/zz/..."})
	const want = `darwincheck: no packages match ["example.com/darwinprobe/zz/..."] in `
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Fatalf("err = %v, want prefix %q", err, want)
	}
}

func mustCheck(t *testing.T, dir, pattern string) *Result {
	t.Helper()
	res, err := Check(dir, []string{pattern})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func wantDiagnostics(t *testing.T, res *Result, want []Diagnostic) {
	t.Helper()
	if !reflect.DeepEqual(res.Diagnostics, want) {
		t.Fatalf("diagnostics:\n got %v\nwant %v", res.Diagnostics, want)
	}
}

// TestCheckReportsNarrowObjCResults: objc.Call[bool] (what the metal package sent
// respondsToSelector: with) and a generated wrapper returning bool are reported; a
// 64-bit result and cgo's BOOL calls are not.
func TestCheckReportsNarrowObjCResults(t *testing.T) {
	dir := probeModule(t)
	res := mustCheck(t, dir, "./narrow")
	file := filepath.Join("narrow", "narrow_darwin.go")
	wantDiagnostics(t, res, []Diagnostic{
		{File: file, Line: 14, Message: "objc.Call result of type bool" + narrowMsg},
		{File: file, Line: 19, Message: "objc.Call result of type bool" + narrowMsg},
	})
}

const narrowMsg = " is narrower than a register: libffi writes 8 bytes there (read a BOOL through cgo, e.g. objc.Object.RespondsToSelector or a C helper)"

// TestCheckReportsPreambleMismatches: a C function called with the wrong number of
// arguments and one the file's preamble does not declare are reported; cgo's helpers,
// standard C types and correct calls are not.
func TestCheckReportsPreambleMismatches(t *testing.T) {
	dir := probeModule(t)
	res := mustCheck(t, dir, "./cgopre")
	file := filepath.Join("cgopre", "cgopre_darwin.go")
	wantDiagnostics(t, res, []Diagnostic{
		{File: file, Line: 22, Message: "C.ingot_two takes 2 arguments in the preamble; called with 1"},
		{File: file, Line: 25, Message: "C.ingot_three is not declared in this file's cgo preamble"},
	})
}
