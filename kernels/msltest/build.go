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
const cacheVersion = "msltest-2"

// program is one compiled .metal file, built once per process.
type program struct {
	once    sync.Once
	exe     string
	sum     string // the executable's SHA-256, checked before it is run
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
	p.exe, p.sum, p.err = compile(metalFile, tu.String())
}

// quoteC quotes a path for a #line directive.
func quoteC(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// cacheDir is this user's directory of compiled programs under os.TempDir.
// Since programs in it are run, it must be private: cacheDir creates it 0700
// and refuses one that another user owns, that others may write to, or that
// is a symbolic link. Entries are named by content hash and written
// atomically, and each executable's SHA-256 is kept beside it and checked
// before it is run.
func cacheDir() (string, error) {
	dir := filepath.Join(os.TempDir(), fmt.Sprintf("ingot-msltest-%d", os.Getuid()))
	if err := os.Mkdir(dir, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return "", fmt.Errorf("msltest: cache directory: %w", err)
	}
	if err := checkPrivate(dir); err != nil {
		return "", err
	}
	return dir, nil
}

// checkPrivate refuses a directory this process should not trust.
func checkPrivate(dir string) error {
	st, err := os.Lstat(dir)
	if err != nil {
		return fmt.Errorf("msltest: cache directory: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("msltest: cache directory %s is not a directory (a symbolic link?)", dir)
	}
	if st.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("msltest: cache directory %s has mode %v; want 0700", dir, st.Mode().Perm())
	}
	if uid, ok := ownerOf(st); ok && uid != os.Getuid() {
		return fmt.Errorf("msltest: cache directory %s belongs to uid %d, not %d", dir, uid, os.Getuid())
	}
	return nil
}

// ErrTampered is wrapped by Run when a cached executable does not have the
// content its recorded hash says, so it is not run.
var ErrTampered = errors.New("msltest: cached executable does not match its recorded SHA-256")

// fileSum is the hex SHA-256 of a file.
func fileSum(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:]), nil
}

// verify checks an executable against its hash just before it is run.
func verify(exe, sum string) error {
	got, err := fileSum(exe)
	if err != nil {
		return fmt.Errorf("msltest: %w", err)
	}
	if got != sum {
		return fmt.Errorf("%w: %s", ErrTampered, exe)
	}
	return nil
}

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
		cache, err := cacheDir()
		if err != nil {
			headersErr = err
			return
		}
		headersDir = filepath.Join(cache, "include-"+headersHash[:16])
		if _, err := os.Stat(headersDir); err == nil {
			return
		}
		tmp, err := os.MkdirTemp(cache, "include-tmp-")
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
// one with the same inputs whose content still matches its recorded hash (one
// that does not is rebuilt). It returns the executable and its SHA-256.
// Compiler diagnostics come back as *CompileError.
func compile(metalFile, tu string) (string, string, error) {
	inc, incHash, err := headers()
	if err != nil {
		return "", "", fmt.Errorf("msltest: writing headers: %w", err)
	}
	cache, err := cacheDir()
	if err != nil {
		return "", "", err
	}
	version, err := compilerVersion()
	if err != nil {
		return "", "", err
	}
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s\x00%s\x00", cacheVersion, version, incHash, strings.Join(cxxFlags, " "))
	h.Write([]byte(tu))
	key := hex.EncodeToString(h.Sum(nil))[:32]
	exe := filepath.Join(cache, key+".bin")
	sumFile := exe + ".sha256"
	if want, err := os.ReadFile(sumFile); err == nil {
		if verify(exe, string(want)) == nil {
			return exe, string(want), nil
		}
	}
	cpp := filepath.Join(cache, key+".cpp")
	if err := writeAtomic(cpp, []byte(tu)); err != nil {
		return "", "", fmt.Errorf("msltest: %w", err)
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
			return "", "", &CompileError{File: metalFile, Output: strings.TrimSpace(out.String())}
		}
		return "", "", fmt.Errorf("msltest: running g++: %w", err)
	}
	sum, err := fileSum(tmpExe)
	if err == nil {
		err = writeAtomic(sumFile, []byte(sum))
	}
	if err == nil {
		err = os.Rename(tmpExe, exe)
	}
	if err != nil {
		os.Remove(tmpExe)
		return "", "", fmt.Errorf("msltest: %w", err)
	}
	return exe, sum, nil
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
