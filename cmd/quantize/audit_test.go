package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/checkpoint"
	"github.com/ingotml/ingot/nn/qwen35"
)

// randomConfig writes a small sparse Qwen3.5 config and returns its path.
func randomConfig(t *testing.T) string {
	cfg, err := qwen35.ReproConfig(nn.ReproOptions{Layers: 4})
	require.NoError(t, err)
	raw, err := cfg.MarshalHF()
	require.NoError(t, err)
	p := filepath.Join(t.TempDir(), "config.json")
	require.NoError(t, os.WriteFile(p, raw, 0o644))
	return p
}

// TestRandomInputRules: -random reads its config as decode reads --config (a FIFO is
// refused, not waited on; /dev/zero is refused, not read to the end of memory) and
// refuses a model over the memory estimate before drawing a weight (2^24 widths or
// 65,536 layers crashed with Go's out-of-memory trace); exit 64, nothing written.
func TestRandomInputRules(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("FIFOs and /dev/zero as on Linux")
	}
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	raw, err := os.ReadFile(randomConfig(t))
	require.NoError(t, err)
	big := func(key string, v int) string {
		var m map[string]any
		require.NoError(t, json.Unmarshal(raw, &m))
		m[key] = v
		if key == "num_hidden_layers" {
			delete(m, "layer_types")
		}
		b, err := json.Marshal(m)
		require.NoError(t, err)
		p := filepath.Join(t.TempDir(), "config.json")
		require.NoError(t, os.WriteFile(p, b, 0o644))
		return p
	}
	for _, c := range []struct{ path, want string }{
		{fifo, "not a regular file"},
		{"/dev/zero", "not a regular file"},
		{big("hidden_size", 1<<24), ""},
	} {
		out := filepath.Join(t.TempDir(), "r")
		code, stdout, stderr := cmd("-random", c.path, "-out", out)
		require.Equal(t, exitUsage, code, "%s: %s%s", c.path, stdout, stderr)
		require.Contains(t, stderr, "quantize: usage: -random: ", c.path)
		require.Contains(t, stderr, c.want, c.path)
		require.NoFileExists(t, out)
	}
}

// TestInputTruncatedWhileRead: an input truncated while quantize copies it is the
// input's fault, named as decode names it (exit 64), not a write error blamed on the
// scratch file (exit 70, "bad address").
func TestInputTruncatedWhileRead(t *testing.T) {
	src := rewrite(t, goldenSets(t)[0], nil, nil)
	defer func() { beforeScratch = func(*checkpoint.Checkpoint) {} }()
	beforeScratch = func(ck *checkpoint.Checkpoint) {
		require.NoError(t, os.Truncate(ck.Files()[0], 4096))
	}
	out := filepath.Join(t.TempDir(), "q")
	code, stdout, stderr := cmd("-in", src, "-out", out)
	require.Equal(t, exitUsage, code, stdout+stderr)
	require.Contains(t, stderr, "quantize: usage: -in: ")
	require.Contains(t, stderr, checkpoint.ErrFileChanged.Error())
	require.NotContains(t, stderr, ".quantize-")
	entries, err := os.ReadDir(filepath.Dir(out))
	require.NoError(t, err)
	require.Empty(t, entries)
}

// TestOutUnwritable: an -out that cannot be made (its parent is a file here; a
// read-only file system in the audit) is a usage error, 64, as decode gives.
func TestOutUnwritable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	out := filepath.Join(file, "q")
	code, _, stderr := cmd("-in", goldenSets(t)[0], "-out", out)
	require.Equal(t, exitUsage, code, stderr)
	require.Contains(t, stderr, "quantize: usage: -out "+out+": ")
	code, _, stderr = cmd("-random", randomConfig(t), "-out", out)
	require.Equal(t, exitUsage, code, stderr)
}
