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
	"sort"
	"strings"
	"sync"
)

//go:embed include
var includeFS embed.FS

// cxxFlags are the g++ flags for every kernel program. -fno-strict-aliasing
// because kernels reinterpret buffer bytes freely; -ffp-contract=off so that
// float arithmetic is not fused behind the kernel's back; stack-clash
// protection so that a large local array hits a fiber's guard page.
var cxxFlags = []string{"-std=c++17", "-O1", "-Wno-attributes", "-fno-strict-aliasing", "-ffp-contract=off", "-fstack-clash-protection", "-fmax-errors=20"}

// cacheVersion changes whenever the generated program changes shape.
const cacheVersion = "msltest-1"

// program is one compiled .metal file, built once per process.
type program struct {
	once    sync.Once
	exe     string
	kernels []*kernelSig
	err     error
}

var (
	programsMu sync.Mutex
	programs   = map[string]*program{}
)

// load returns the compiled program for a .metal file, compiling it unless
// this process or an earlier one already did for the same content.
func load(metalFile string) (*program, error) {
	src, err := os.ReadFile(metalFile)
	if err != nil {
		return nil, fmt.Errorf("msltest: %w", err)
	}
	sum := sha256.Sum256(append([]byte(metalFile+"\x00"), src...))
	key := hex.EncodeToString(sum[:])
	programsMu.Lock()
	p, ok := programs[key]
	if !ok {
		p = &program{}
		programs[key] = p
	}
	programsMu.Unlock()
	p.once.Do(func() { p.build(metalFile, string(src)) })
	return p, p.err
}

func (p *program) build(metalFile, src string) {
	toks, err := lex(src)
	if err != nil {
		p.err = fmt.Errorf("msltest: %s: %w", metalFile, err)
		return
	}
	p.kernels, err = findKernels(toks)
	if err != nil {
		p.err = fmt.Errorf("msltest: %s: %w", metalFile, err)
		return
	}
	body, err := rewrite(src, toks)
	if err != nil {
		p.err = fmt.Errorf("msltest: %s: %w", metalFile, err)
		return
	}
	var tu strings.Builder
	tu.WriteString("#include \"mslemu.h\"\n")
	fmt.Fprintf(&tu, "#line 1 %s\n", quoteC(metalFile))
	tu.WriteString(body)
	tu.WriteString("\n#line 1 \"msltest-driver\"\n#include \"mslemu_driver.h\"\n")
	tu.WriteString(wrappers(p.kernels))
	p.exe, p.err = compile(metalFile, tu.String())
}

// quoteC quotes a path for a #line directive.
func quoteC(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// cacheDir is the directory shared by all processes for compiled programs;
// entries are named by content hash and written atomically.
func cacheDir() string { return filepath.Join(os.TempDir(), "ingot-msltest") }

var (
	headersOnce sync.Once
	headersDir  string
	headersHash string
	headersErr  error
)

// headers writes the embedded include directory into the cache once, under a
// name derived from its content.
func headers() (string, string, error) {
	headersOnce.Do(func() {
		h := sha256.New()
		var names []string
		files := map[string][]byte{}
		headersErr = fs.WalkDir(includeFS, "include", func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := includeFS.ReadFile(path)
			if err != nil {
				return err
			}
			names = append(names, path)
			files[path] = data
			return nil
		})
		if headersErr != nil {
			return
		}
		sort.Strings(names)
		for _, n := range names {
			fmt.Fprintf(h, "%s\x00%d\x00", n, len(files[n]))
			h.Write(files[n])
		}
		headersHash = hex.EncodeToString(h.Sum(nil))
		headersDir = filepath.Join(cacheDir(), "include-"+headersHash[:16])
		if _, err := os.Stat(headersDir); err == nil {
			return
		}
		if headersErr = os.MkdirAll(cacheDir(), 0o755); headersErr != nil {
			return
		}
		tmp, err := os.MkdirTemp(cacheDir(), "include-tmp-")
		if err != nil {
			headersErr = err
			return
		}
		defer os.RemoveAll(tmp)
		for _, n := range names {
			if err := os.WriteFile(filepath.Join(tmp, filepath.Base(n)), files[n], 0o644); err != nil {
				headersErr = err
				return
			}
		}
		// Another process may have won the race; its copy is identical.
		if err := os.Rename(tmp, headersDir); err != nil {
			if _, statErr := os.Stat(headersDir); statErr != nil {
				headersErr = err
			}
		}
	})
	return headersDir, headersHash, headersErr
}

// compile builds the translation unit into an executable, reusing a cached
// one with the same inputs. Compiler diagnostics come back as *CompileError.
func compile(metalFile, tu string) (string, error) {
	inc, incHash, err := headers()
	if err != nil {
		return "", fmt.Errorf("msltest: writing headers: %w", err)
	}
	version, err := compilerVersion()
	if err != nil {
		return "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00", cacheVersion, version, incHash, strings.Join(cxxFlags, " "))
	h.Write([]byte(tu))
	key := hex.EncodeToString(h.Sum(nil))[:32]
	exe := filepath.Join(cacheDir(), key+".bin")
	if _, err := os.Stat(exe); err == nil {
		return exe, nil
	}
	cpp := filepath.Join(cacheDir(), key+".cpp")
	if err := writeAtomic(cpp, []byte(tu)); err != nil {
		return "", fmt.Errorf("msltest: %w", err)
	}
	tmpExe := fmt.Sprintf("%s.tmp%d", exe, os.Getpid())
	args := append(append([]string{}, cxxFlags...), "-I", inc, "-o", tmpExe, cpp)
	cmd := exec.Command("g++", args...)
	cmd.Env = append(os.Environ(), "LC_ALL=C") // plain ASCII quotes in messages
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		os.Remove(tmpExe)
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return "", &CompileError{File: metalFile, Output: strings.TrimSpace(out.String())}
		}
		return "", fmt.Errorf("msltest: running g++: %w", err)
	}
	if err := os.Rename(tmpExe, exe); err != nil {
		return "", fmt.Errorf("msltest: %w", err)
	}
	return exe, nil
}

// writeAtomic writes a file under a temporary name and renames it, so that a
// concurrent reader never sees it half written.
func writeAtomic(path string, data []byte) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".tmp")
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return err
	}
	return os.Rename(f.Name(), path)
}

var (
	compilerOnce sync.Once
	compilerVer  string
	compilerErr  error
)

// compilerVersion returns the first line of `g++ --version`, which also
// tells whether g++ runs at all.
func compilerVersion() (string, error) {
	compilerOnce.Do(func() {
		path, err := exec.LookPath("g++")
		if err != nil {
			compilerErr = fmt.Errorf("%w: %v", ErrNoCompiler, err)
			return
		}
		out, err := exec.Command(path, "--version").Output()
		if err != nil {
			compilerErr = fmt.Errorf("%w: g++ --version: %v", ErrNoCompiler, err)
			return
		}
		compilerVer, _, _ = strings.Cut(string(out), "\n")
	})
	return compilerVer, compilerErr
}
