//go:build unix

package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestInterrupt builds the command, interrupts a long run once it has printed a few
// samples, and checks that it reports the run so far, writes the JSON and the plot,
// and exits 130.
func TestInterrupt(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "decode")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stderr = os.Stderr
	require.NoError(t, build.Run())
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		js, svg := filepath.Join(dir, sig.String()+".json"), filepath.Join(dir, sig.String()+".svg")
		cmd := exec.Command(bin, "--layers", "6", "--tokens", "10000000", "--report-every", "20",
			"--json-out", js, "--plot", svg)
		stdout, err := cmd.StdoutPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		sc := bufio.NewScanner(stdout)
		var out strings.Builder
		samples := 0
		for samples < 10 && sc.Scan() {
			out.WriteString(sc.Text() + "\n")
			if strings.HasPrefix(sc.Text(), "tok ") {
				samples++
			}
		}
		require.Equal(t, 10, samples, out.String())
		require.NoError(t, cmd.Process.Signal(sig))
		rest, _ := io.ReadAll(stdout)
		out.Write(rest)
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err = <-done:
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Fatalf("%v: still running 30 s after the signal\n%s", sig, out.String())
		}
		var ee *exec.ExitError
		require.True(t, errors.As(err, &ee), "%v: %v", sig, err)
		require.Equal(t, exitInterrupt, ee.ExitCode(), "%v\n%s", sig, out.String())
		o := out.String()
		require.Contains(t, o, "[interrupted] stopped at token ", sig)
		require.Contains(t, o, "[verdict] LEAKING: +4.0 LIVE buffer objects/token", sig)
		require.Contains(t, o, "[run] ", sig)
		require.Contains(t, o, "[plot] wrote "+svg, sig)
		b, err := os.ReadFile(js)
		require.NoError(t, err, sig)
		var j map[string]any
		require.NoError(t, json.Unmarshal(b, &j))
		require.Equal(t, true, j["interrupted"], sig)
		require.Equal(t, "leaking", j["verdict"], sig)
		require.GreaterOrEqual(t, len(j["tokens"].([]any)), 200, sig)
		_, err = os.Stat(svg)
		require.NoError(t, err, sig)
	}
}
