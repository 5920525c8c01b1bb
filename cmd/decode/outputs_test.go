package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHugeLimitPlot: --limit 9223372036854775807 (and 8e18) with --plot runs, writes
// the chart and the JSON, and exits with the run's verdict: the chart's y axis, 1.08 x
// the limit, once formatted as math.MinInt64, overflowed the stack (exit 2, the
// "crash reproduced" code).
func TestHugeLimitPlot(t *testing.T) {
	for _, limit := range []string{"9223372036854775807", "8000000000000000000"} {
		p := filepath.Join(t.TempDir(), "x.svg")
		code, out, j := decode(t, "--layers", "4", "--tokens", "16", "--limit", limit, "--plot", p)
		require.Equal(t, exitLeak, code, out)
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		n, _ := strconv.Atoi(limit)
		require.Contains(t, string(b), "resource limit "+comma(n))
		require.Equal(t, float64(n), j["resource_limit"])
	}
}

// TestOutputsOnOnePathRefused: two outputs naming one file (however spelt, or through
// a hard link) are refused before anything runs: the JSON silently replaced the plot.
func TestOutputsOnOnePathRefused(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "x.svg")
	usage(t, "--json-out "+p+" and --plot "+p+" name one file: give each output its own path", "--plot", p, "--json-out", p)
	other := filepath.Join(dir, "sub", "..", "x.svg")
	usage(t, "--plot "+p+" and --cpuprofile "+other+" name one file", "--plot", p, "--cpuprofile", other)
	require.NoFileExists(t, p)
	require.NoError(t, os.WriteFile(p, []byte("old"), 0o644))
	link := filepath.Join(dir, "link.json")
	require.NoError(t, os.Link(p, link))
	usage(t, "--json-out "+link+" and --plot "+p+" name one file", "--plot", p, "--json-out", link)
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	require.Equal(t, "old", string(b))
}

// TestOutputsReplacedWhole: an output is written beside its path and renamed over it,
// so a reader (or a kill mid-write) sees the old file or the new one, never a
// truncated one; ten concurrent writers leave one whole file.
func TestOutputsReplacedWhole(t *testing.T) {
	p := filepath.Join(t.TempDir(), "run.json")
	require.NoError(t, writeJSON(p, map[string]int{"old": 1}))
	big := make([]int, 200_000)
	var stop atomic.Bool
	var bad atomic.Value
	var readers sync.WaitGroup
	readers.Add(1)
	go func() {
		defer readers.Done()
		for !stop.Load() {
			b, err := os.ReadFile(p)
			if err == nil && !json.Valid(b) {
				bad.Store(fmt.Sprintf("%d bytes of invalid JSON", len(b)))
				return
			}
		}
	}()
	var writers sync.WaitGroup
	for i := range 10 {
		writers.Add(1)
		go func() {
			defer writers.Done()
			for range 3 {
				require.NoError(t, writeJSON(p, map[string]any{"run": i, "big": big}))
			}
		}()
	}
	writers.Wait()
	stop.Store(true)
	readers.Wait()
	require.Nil(t, bad.Load())
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	require.True(t, json.Valid(b))
	entries, err := os.ReadDir(filepath.Dir(p))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file left")
}

// TestCPUProfileErrors: a profile that cannot be written is an error (exit 70), not a
// silent loss; a run refused after the profile started leaves an existing file as it
// was.
func TestCPUProfileErrors(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full here")
	}
	code, out, errs := cmdRun("--layers", "4", "--tokens", "16", "--cpuprofile", "/dev/full")
	require.Equal(t, exitFailure, code, out+errs)
	require.Contains(t, errs, "decode: --cpuprofile /dev/full: ")
	require.Contains(t, errs, "no space left on device")

	keep := filepath.Join(t.TempDir(), "keep.prof")
	require.NoError(t, os.WriteFile(keep, []byte("old"), 0o644))
	code, _, errs = cmdRun("--model", filepath.Join(t.TempDir(), "nonexistent"), "--cpuprofile", keep)
	require.Equal(t, exitUsage, code, errs)
	b, err := os.ReadFile(keep)
	require.NoError(t, err)
	require.Equal(t, "old", string(b))
	entries, err := os.ReadDir(filepath.Dir(keep))
	require.NoError(t, err)
	require.Len(t, entries, 1, "no temporary file left")

	prof := filepath.Join(t.TempDir(), "cpu.prof")
	code, out, errs = cmdRun("--layers", "4", "--tokens", "16", "--cpuprofile", prof)
	require.Equal(t, exitLeak, code, out+errs)
	st, err := os.Stat(prof)
	require.NoError(t, err)
	require.Positive(t, st.Size())
}
