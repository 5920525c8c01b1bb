package main

import (
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
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
// ctx stops the build: the go commands it runs are interrupted (so that go build
// removes its own work directory) and buildSite returns ctx's error.
func buildSite(ctx context.Context, dir string) error {
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
	build := goCommand(ctx, "build", "-trimpath", "-o", filepath.Join(dir, "ingot.wasm"), enginePkg)
	build.Env = append(os.Environ(), "GOOS=js", "GOARCH=wasm")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("building the engine (GOOS=js GOARCH=wasm go build %s): %w\n%s", enginePkg, err, out)
	}
	if err := copyConfigs(ctx, filepath.Join(dir, "configs")); err != nil {
		return err
	}
	root, err := goCommand(ctx, "env", "GOROOT").Output()
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

// goCommand is the go command with args, interrupted (then killed after 10 s) when
// ctx is done.
func goCommand(ctx context.Context, args ...string) *exec.Cmd {
	c := exec.CommandContext(ctx, "go", args...)
	c.Cancel = func() error { return c.Process.Signal(os.Interrupt) }
	c.WaitDelay = 10 * time.Second
	return c
}

// decodePkg holds the example configs (testdata/NAME/config.json) the page offers.
const decodePkg = "github.com/ingotml/ingot/cmd/decode"

// copyConfigs copies cmd/decode's example configs to dir as NAME.json, with
// index.json listing the names, so that the page can load one (and a link can preset
// one: ?config=NAME).
func copyConfigs(ctx context.Context, dir string) error {
	src, err := goCommand(ctx, "list", "-f", "{{.Dir}}", decodePkg).Output()
	if err != nil {
		return fmt.Errorf("go list %s: %w", decodePkg, err)
	}
	paths, err := filepath.Glob(filepath.Join(strings.TrimSpace(string(src)), "testdata", "*", "config.json"))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	names := []string{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		name := filepath.Base(filepath.Dir(p))
		if err := os.WriteFile(filepath.Join(dir, name+".json"), b, 0o644); err != nil {
			return err
		}
		names = append(names, name)
	}
	index, _ := json.Marshal(names)
	return os.WriteFile(filepath.Join(dir, "index.json"), index, 0o644)
}
