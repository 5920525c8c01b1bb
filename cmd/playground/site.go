package main

import (
	"embed"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// static holds the page: index.html, app.js, worker.js, style.css.
//
//go:embed static
var static embed.FS

// enginePkg is the WebAssembly program's package.
const enginePkg = "github.com/ingotml/ingot/cmd/playground/engine"

// buildSite writes the static site to dir: the page's files, ingot.wasm built from
// enginePkg, and the toolchain's wasm_exec.js (the JavaScript half of Go's wasm ABI,
// which must match the compiler that built ingot.wasm).
func buildSite(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	names, err := fs.Glob(static, "static/*")
	if err != nil {
		return err
	}
	for _, name := range names {
		b, err := static.ReadFile(name)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(name)), b, 0o644); err != nil {
			return fmt.Errorf("writing the page: %w", err)
		}
	}
	build := exec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, "ingot.wasm"), enginePkg)
	build.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building the engine (GOOS=js GOARCH=wasm go build %s): %w\n%s", enginePkg, err, out)
	}
	root, err := exec.Command("go", "env", "GOROOT").Output()
	if err != nil {
		return fmt.Errorf("go env GOROOT: %w", err)
	}
	// Go 1.24 moved wasm_exec.js from misc/wasm to lib/wasm.
	var js []byte
	for _, sub := range []string{"lib/wasm", "misc/wasm"} {
		if js, err = os.ReadFile(filepath.Join(strings.TrimSpace(string(root)), sub, "wasm_exec.js")); err == nil {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("wasm_exec.js not found under GOROOT's lib/wasm or misc/wasm: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, "wasm_exec.js"), js, 0o644)
}
