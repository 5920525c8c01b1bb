package msltest

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
)

// Record is an MSL struct's layout as clang computes it: its size and its
// top-level fields in order.
type Record struct {
	Name   string
	Size   int
	Fields []Field
}

// Field is one top-level field: its byte offset, its type as clang spells it
// ("int", "float", "int[8]", "struct Strided") and its name.
type Field struct {
	Offset int
	Type   string
	Name   string
}

var (
	recordStart = regexp.MustCompile(`^\s*0 \| struct (\w+)$`)
	recordField = regexp.MustCompile(`^\s*(\d+) \|   (\S.*) (\w+)$`) // three spaces: top level
	recordSize  = regexp.MustCompile(`\[sizeof=(\d+),`)
)

// RecordLayouts returns the layouts clang gives the named structs of an MSL
// source (compiled as the lint compiles it, so with MSL's type sizes), which
// the host's setBytes packers must match.
func RecordLayouts(src string, names []string) (map[string]Record, error) {
	clang, err := exec.LookPath("clang++")
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNoClang, err)
	}
	dir, err := lintHeaders()
	if err != nil {
		return nil, fmt.Errorf("msltest: lint headers: %w", err)
	}
	var force strings.Builder // clang lays out only the records a sizeof needs
	force.WriteString("\nint ingot_force_layouts[] = {0")
	for _, n := range names {
		fmt.Fprintf(&force, ", sizeof(%s)", n)
	}
	force.WriteString("};\n")
	cmd := exec.Command(clang, "-x", "c++", "-std=c++17", "-fsyntax-only", "-nostdinc", "-nostdinc++",
		"-Wno-unknown-attributes", "-I", dir, "-include", "mslcheck.h", "-Xclang", "-fdump-record-layouts", "-")
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.Stdin = strings.NewReader(src + force.String())
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return nil, fmt.Errorf("msltest: clang++ on the record layouts: %s", strings.TrimSpace(errOut.String()))
		}
		return nil, fmt.Errorf("msltest: running clang++: %w", err)
	}
	recs := map[string]Record{}
	var cur *Record
	for _, line := range strings.Split(out.String(), "\n") {
		if m := recordStart.FindStringSubmatch(line); m != nil {
			cur = &Record{Name: m[1]}
			continue
		}
		if cur == nil {
			continue
		}
		if m := recordField.FindStringSubmatch(line); m != nil {
			off, _ := strconv.Atoi(m[1])
			cur.Fields = append(cur.Fields, Field{Offset: off, Type: m[2], Name: m[3]})
			continue
		}
		if m := recordSize.FindStringSubmatch(line); m != nil {
			cur.Size, _ = strconv.Atoi(m[1])
			recs[cur.Name] = *cur
			cur = nil
		}
	}
	for _, n := range names {
		if _, ok := recs[n]; !ok {
			return nil, fmt.Errorf("msltest: clang++ gave no layout for struct %s", n)
		}
	}
	return recs, nil
}
