package msltest

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

//go:embed lint
var lintFS embed.FS

// ErrNoClang is wrapped by Lint when clang++ cannot be used.
var ErrNoClang = errors.New("msltest: clang++ is not available")

// LintError is MSL that the address-space lint rejects; Output lists every
// problem with its file and line.
type LintError struct {
	Name   string
	Output string
}

// Error gives the source's name and the problems.
func (e *LintError) Error() string { return fmt.Sprintf("msltest: lint of %s:\n%s", e.Name, e.Output) }

// Lint checks MSL source (named name in messages) for what the emulator lets
// pass but Apple's compiler may not:
//   - a kernel's [[buffer(n)]] parameter without an address space (device or
//     constant);
//   - a floating literal without a suffix (a double in C++; MSL has no double)
//     or any use of double;
//   - with clang++ in C++17 mode, after mslcheck.h maps device, constant and
//     threadgroup to clang address spaces: a pointer or reference into one
//     address space used as another or as a plain one (threadgroup memory
//     assigned to a device pointer, a device pointer passed to a helper taking
//     an unqualified one).
//
// Threadgroup variables become static threadgroup ones (clang refuses address
// spaces on automatic variables). Problems come back as a *LintError. The
// header's 4-vectors copy from any address space (qswitch_down_chunks loads its
// act chunk as float4s); its 2- and 3-vectors do not, so such a vector loaded
// from device memory is reported too (no kernel of the project does so).
func Lint(name, src string) error {
	toks, err := lex(src)
	if err != nil {
		return fmt.Errorf("msltest: %s: %w", name, err)
	}
	var problems []string
	for _, t := range toks {
		if t.kind == tokNumber {
			if e, ok := floatLiteral(t); ok && e.text == "f" {
				problems = append(problems, fmt.Sprintf("%s:%d: floating literal %s has no suffix: a double in C++ (write %sf)", name, t.line, t.text, t.text))
			}
		}
	}
	ks, err := findKernels(toks)
	if err != nil {
		return fmt.Errorf("msltest: %s: %w", name, err)
	}
	for _, k := range ks {
		for _, p := range k.params {
			if p.kind == paramBuffer && !p.addressSpace {
				problems = append(problems, fmt.Sprintf("%s:%d: kernel %s: [[buffer(%d)]] parameter %s has no address space (device or constant)", name, k.line, k.name, p.index, p.name))
			}
		}
	}
	out, err := clangCheck(name, lintRewrite(src, toks))
	if err != nil {
		return err
	}
	if out != "" {
		problems = append(problems, out)
	}
	if len(problems) > 0 {
		return &LintError{Name: name, Output: strings.Join(problems, "\n")}
	}
	return nil
}

// lintRewrite makes each threadgroup variable a static threadgroup one, on the
// same line.
func lintRewrite(src string, toks []token) string {
	var b strings.Builder
	last := 0
	for i, t := range toks {
		if t.kind != tokIdent || t.text != "threadgroup" || (i > 0 && toks[i-1].text == "[") {
			continue
		}
		if es := threadgroupEdits(toks, i); len(es) > 1 || strings.HasPrefix(es[0].text, "static") {
			b.WriteString(src[last:t.pos])
			b.WriteString("static threadgroup")
			last = t.end
		}
	}
	b.WriteString(src[last:])
	return b.String()
}

// lintHeaders writes the lint's headers into the private cache directory
// (once per content and cache directory).
func lintHeaders() (string, error) {
	cache, err := cacheDir()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	files := map[string][]byte{}
	err = fs.WalkDir(lintFS, "lint", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := lintFS.ReadFile(path)
		files[filepath.Base(path)] = data
		fmt.Fprintf(h, "%s\x00%d\x00", path, len(data))
		h.Write(data)
		return err
	})
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "lint-"+hex.EncodeToString(h.Sum(nil))[:16])
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	for n, data := range files {
		if err := writeAtomic(filepath.Join(dir, n), data); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// clangCheck runs clang++ -fsyntax-only on src and returns its diagnostics
// (empty when there are none).
func clangCheck(name, src string) (string, error) {
	clang, err := exec.LookPath("clang++")
	if err != nil {
		return "", fmt.Errorf("%w: %v", ErrNoClang, err)
	}
	dir, err := lintHeaders()
	if err != nil {
		return "", fmt.Errorf("msltest: lint headers: %w", err)
	}
	cmd := exec.Command(clang, "-x", "c++", "-std=c++17", "-fsyntax-only", "-nostdinc", "-nostdinc++",
		"-Wno-unknown-attributes", "-fno-caret-diagnostics", "-ferror-limit=50", "-I", dir, "-include", "mslcheck.h", "-")
	cmd.Env = append(os.Environ(), "LC_ALL=C")
	cmd.Stdin = strings.NewReader(fmt.Sprintf("#line 1 %s\n%s", quoteC(name), src))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if !errors.As(err, &exit) {
			return "", fmt.Errorf("msltest: running clang++: %w", err)
		}
		return strings.TrimSpace(out.String()), nil
	}
	return "", nil
}
