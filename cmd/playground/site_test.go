//go:build !js

package main

import (
	"bytes"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestSite: the built site has the page, the engine and the toolchain's wasm_exec.js;
// the server sends the engine as application/wasm (instantiateStreaming refuses
// anything else), uncached; and no file refers to another host (it works offline).
func TestSite(t *testing.T) {
	dir, _ := site(t)
	for _, f := range []string{"index.html", "app.js", "worker.js", "style.css", "ingot.wasm", "wasm_exec.js", "configs/index.json", "configs/qwen3_5_0.8b.json"} {
		_, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err, f)
	}
	wasm, err := os.ReadFile(filepath.Join(dir, "ingot.wasm"))
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(wasm, []byte("\x00asm")), "a WebAssembly module")
	root, err := exec.Command("go", "env", "GOROOT").Output()
	require.NoError(t, err)
	want, err := os.ReadFile(filepath.Join(strings.TrimSpace(string(root)), "lib", "wasm", "wasm_exec.js"))
	require.NoError(t, err)
	got, err := os.ReadFile(filepath.Join(dir, "wasm_exec.js"))
	require.NoError(t, err)
	require.Equal(t, want, got, "the toolchain's own wasm_exec.js")

	srv := httptest.NewServer(handler(dir))
	defer srv.Close()
	res, err := srv.Client().Get(srv.URL + "/ingot.wasm")
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, 200, res.StatusCode)
	require.Equal(t, "application/wasm", res.Header.Get("Content-Type"))
	require.Equal(t, "no-store", res.Header.Get("Cache-Control"))
	res, err = srv.Client().Get(srv.URL + "/")
	require.NoError(t, err)
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	require.Contains(t, string(page), `<script src="app.js"></script>`)

	external := regexp.MustCompile(`(?i)(src|href)\s*=\s*["']?(https?:)?//|fetch\(\s*["']https?:|importScripts\(\s*["']https?:`)
	for _, f := range []string{"index.html", "app.js", "worker.js", "style.css"} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		require.Nil(t, external.Find(b), "%s loads from another host", f)
	}
}
