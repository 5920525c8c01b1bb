//go:build unix

package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// childEnv makes the test binary run the command itself (see TestMain), pausing once
// its scratch copy is written after creating the file the variable names.
const childEnv = "QUANTIZE_TEST_CHILD_READY"

func TestMain(m *testing.M) {
	if ready := os.Getenv(childEnv); ready != "" {
		afterScratch = func() {
			os.WriteFile(ready, nil, 0o644)
			time.Sleep(time.Minute) // the parent signals meanwhile
		}
		main()
	}
	os.Exit(m.Run())
}

// TestQuantizeInterrupted: SIGINT or SIGTERM in the middle of a run (the scratch copy
// written, the output not yet) leaves nothing beside -out: no scratch copy, no
// partial output; the exit code is 128 + the signal. While the run is paused there,
// -out does not exist yet: a partial output never carries its name.
func TestQuantizeInterrupted(t *testing.T) {
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			parent := t.TempDir()
			out := filepath.Join(parent, "q")
			ready := filepath.Join(t.TempDir(), "ready")
			c := exec.Command(os.Args[0], "-in", goldenSets(t)[0], "-out", out)
			c.Env = append(os.Environ(), childEnv+"="+ready)
			var stderr strings.Builder
			c.Stderr = &stderr
			require.NoError(t, c.Start())
			deadline := time.Now().Add(30 * time.Second)
			for {
				if _, err := os.Stat(ready); err == nil {
					break
				}
				require.True(t, time.Now().Before(deadline), "the child never reached its scratch copy: %s", stderr.String())
				time.Sleep(10 * time.Millisecond)
			}
			entries, err := os.ReadDir(parent)
			require.NoError(t, err)
			require.Len(t, entries, 1, "only the hidden work directory")
			require.True(t, strings.HasPrefix(entries[0].Name(), ".quantize-q-"), entries[0].Name())
			require.NoFileExists(t, out)

			require.NoError(t, c.Process.Signal(sig))
			err = c.Wait()
			var exit *exec.ExitError
			require.True(t, errors.As(err, &exit), "%v", err)
			require.Equal(t, 128+int(sig), exit.ExitCode(), stderr.String())
			require.Contains(t, stderr.String(), "quantize: "+sig.String()+": stopped, removed "+filepath.Join(parent, entries[0].Name()))
			entries, err = os.ReadDir(parent)
			require.NoError(t, err)
			require.Empty(t, entries, "nothing left beside -out")
		})
	}
}
