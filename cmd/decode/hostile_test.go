//go:build unix

package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/internal/golden"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/checkpoint"
	"github.com/ingotml/ingot/nn/models"
	"github.com/ingotml/ingot/tensor"
)

// decodeWithin runs the command, failing the test if it has not returned after a few
// seconds (an open blocked on fifo, which is then released).
func decodeWithin(t *testing.T, fifo string, args ...string) (int, string) {
	t.Helper()
	type result struct {
		code int
		out  string
	}
	done := make(chan result, 1)
	go func() {
		var out, errb bytes.Buffer
		code := run(args, &out, &errb)
		done <- result{code, out.String() + errb.String()}
	}()
	select {
	case r := <-done:
		return r.code, r.out
	case <-time.After(10 * time.Second):
		// Release blocked opens until the run ends: each pass opens both ends (so an
		// open waiting for the other side returns), drains what was written, and
		// closes (so a reader sees end of file).
		for {
			if fd, err := syscall.Open(fifo, syscall.O_RDWR|syscall.O_NONBLOCK, 0); err == nil {
				syscall.Read(fd, make([]byte, 1<<16))
				syscall.Close(fd)
			}
			select {
			case <-done:
				t.Fatalf("%v: hung on the FIFO %s", args, fifo)
				return 0, ""
			case <-time.After(50 * time.Millisecond):
			}
		}
	}
}

// TestFIFOsRefused: a FIFO as --config, as a checkpoint's config.json or as --json-out
// is refused at once (exit 64, the file named) instead of blocking in open.
func TestFIFOsRefused(t *testing.T) {
	tmp := t.TempDir()
	fifo := filepath.Join(tmp, "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	// A checkpoint directory whose config.json is a FIFO.
	sets, err := golden.Sets()
	require.NoError(t, err)
	dir := filepath.Join(tmp, "ck")
	require.NoError(t, os.Mkdir(dir, 0o755))
	require.NoError(t, os.Symlink(filepath.Join(sets[0], "model.safetensors"), filepath.Join(dir, "model.safetensors")))
	cfg := filepath.Join(dir, "config.json")
	require.NoError(t, syscall.Mkfifo(cfg, 0o644))
	modelErr := "checkpoint " + cfg + ": cannot read the model config: open " + cfg + ": is a named pipe, not a regular file"
	for _, c := range []struct {
		name, fifo, want string
		args             []string
	}{
		{"config", fifo, fifo + ": is a named pipe, not a regular file", []string{"--config", fifo, "--predict-only"}},
		{"model predict", cfg, modelErr, []string{"--model", dir, "--predict-only"}},
		{"model run", cfg, modelErr, []string{"--model", dir, "--tokens", "16"}},
		{"json-out", fifo, "decode: usage: --json-out " + fifo + ": is a named pipe, not a regular file", []string{"--json-out", fifo, "--tokens", "16"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, out := decodeWithin(t, c.fifo, c.args...)
			require.Equal(t, exitUsage, code, out)
			require.Contains(t, out, c.want)
		})
	}
}

// TestEmptyModelPathsRefused: --model "" and --config "" are refused, not taken as
// "no flag" (which would silently run the random model).
func TestEmptyModelPathsRefused(t *testing.T) {
	usage(t, `--model needs a checkpoint directory, not ""`, "--model", "", "--tokens", "16")
	usage(t, `--config needs a config.json path, not ""`, "--config", "", "--tokens", "16")
	usage(t, `--model needs a checkpoint directory, not " "`, "--model", " ", "--predict-only")
}

// TestFileStringsEscaped: a tensor name holding terminal escapes (clear the screen,
// print a green "[verdict] FLAT") reaches the terminal escaped, on one line.
func TestFileStringsEscaped(t *testing.T) {
	sets, err := golden.Sets()
	require.NoError(t, err)
	dir := t.TempDir()
	cfg, err := os.ReadFile(filepath.Join(sets[0], "config.json"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), cfg, 0o644))
	header := `{"\u001b[2J\u001b[32m[verdict] FLAT\u001b[0m\n":{"dtype":"F128","shape":[1],"data_offsets":[0,1]}}`
	file := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	file = append(append(file, header...), 0)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "model.safetensors"), file, 0o644))
	for _, extra := range []string{"--predict-only", "--tokens=16"} {
		var out, errb bytes.Buffer
		code := run([]string{"--model", dir, extra}, &out, &errb)
		require.Equal(t, exitUsage, code, errb.String())
		require.Equal(t, `decode: usage: --model: safetensors `+filepath.Join(dir, "model.safetensors")+`: tensor \x1b[2J\x1b[32m[verdict] FLAT\x1b[0m\n: unknown dtype "F128"`+"\n", errb.String())
	}
}

// TestCheckpointShrinksUnderTheLoad: decode's load path (headers inspected, then the
// model built from the same open checkpoint) with the weight file truncated in between
// ends in an error, not SIGBUS (exit 2 would read as "crash reproduced"): the load's
// copies fail naming the file and tensor (checkpoint.ErrFileChanged), and weights used
// in place fail the first evaluation that reads them (graph.ErrMemoryFault).
func TestCheckpointShrinksUnderTheLoad(t *testing.T) {
	sets, err := golden.Sets()
	require.NoError(t, err)
	dir := t.TempDir()
	for _, f := range []string{"config.json", "model.safetensors"} {
		b, err := os.ReadFile(filepath.Join(sets[0], f))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, f), b, 0o644))
	}
	info, err := inspectCheckpoint(dir)
	require.NoError(t, err)
	defer info.ck.Close()
	weights := filepath.Join(dir, "model.safetensors")
	require.NoError(t, os.Truncate(weights, 4096))
	g := graph.NewCPU(graph.Options{})
	m, err := models.LoadCheckpoint(info.ck, g, nn.Options{})
	if err != nil {
		require.ErrorIs(t, err, checkpoint.ErrFileChanged)
		require.Contains(t, err.Error(), "checkpoint "+weights+": tensor ")
		return
	}
	_, err = m.Forward(tensor.FromInt32(g, []int32{1, 2}, 1, 2), nil).Float32s()
	require.ErrorIs(t, err, graph.ErrMemoryFault)
}
