//go:build unix

package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/internal/childtest"
	"github.com/ingotml/ingot/nn/checkpoint"
)

// The child's hooks: with childEnv set the test binary runs the command, which
// writes childtest.Ready when it reaches the point pointEnv names, where it pauses
// (a minute where the run is stopped; a second before or after the publishing
// rename, which then goes on).
const (
	childEnv = "QUANTIZE_TEST_CHILD"
	pointEnv = "QUANTIZE_TEST_CHILD_POINT"
)

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		pause := func(d time.Duration) func() {
			return func() {
				childtest.WriteReady()
				time.Sleep(d) // the parent signals meanwhile
			}
		}
		switch os.Getenv(pointEnv) {
		case "scratch":
			beforeScratch = func(*checkpoint.Checkpoint) { pause(time.Minute)() }
		case "before-rename":
			beforePublish = pause(time.Second)
		case "after-rename":
			afterPublish = pause(time.Second)
		default:
			afterScratch = pause(time.Minute)
		}
		main()
	}
	os.Exit(m.Run())
}

// child starts the command in a child process paused at point and waits until it is
// there.
func child(t *testing.T, point string, args ...string) *childtest.Child {
	c := childtest.Start(t, true, []string{childEnv + "=1", pointEnv + "=" + point}, os.Args[0], args...)
	c.Until(t, 60*time.Second, childtest.IsReady)
	return c
}

// TestQuantizeInterrupted: SIGINT or SIGTERM while the scratch copy is written or
// once it is (the output not yet) leaves nothing beside -out: no scratch copy, no
// partial output; the exit code is 128 + the signal. While the run is paused there,
// -out does not exist yet: a partial output never carries its name.
func TestQuantizeInterrupted(t *testing.T) {
	for _, point := range []string{"scratch", "after-scratch"} {
		for _, sig := range childtest.Stops {
			t.Run(point+"/"+sig.String(), func(t *testing.T) {
				parent := t.TempDir()
				out := filepath.Join(parent, "q")
				c := child(t, point, "-in", goldenSets(t)[0], "-out", out)
				entries, err := os.ReadDir(parent)
				require.NoError(t, err)
				require.Len(t, entries, 1, "only the hidden work directory")
				require.True(t, strings.HasPrefix(entries[0].Name(), ".quantize-q-"), entries[0].Name())
				require.NoFileExists(t, out)

				c.Signal(t, sig)
				code, stderr := c.Exit(t, 2*time.Minute)
				require.Equal(t, 128+int(sig), code, stderr)
				require.Contains(t, stderr, "quantize: "+sig.String()+": stopped, removed "+filepath.Join(parent, entries[0].Name()))
				entries, err = os.ReadDir(parent)
				require.NoError(t, err)
				require.Empty(t, entries, "nothing left beside -out")
			})
		}
	}
}

// TestQuantizeInterruptedAtTheRename: a signal right before the publishing rename
// waits for it (the rename is under the handler's lock) and one right after it
// arrives when the output is whole: either way the run finishes with -out complete
// (it loads), no scratch copy left, and the late signal reported.
func TestQuantizeInterruptedAtTheRename(t *testing.T) {
	for _, point := range []string{"before-rename", "after-rename"} {
		t.Run(point, func(t *testing.T) {
			parent := t.TempDir()
			out := filepath.Join(parent, "q")
			c := child(t, point, "-in", goldenSets(t)[0], "-out", out)
			c.Signal(t, os.Interrupt)
			code, stderr := c.Exit(t, 2*time.Minute)
			require.Equal(t, exitOK, code, stderr)
			require.Contains(t, stderr, "quantize: interrupt: arrived after the output was complete: kept it")
			ck, err := checkpoint.OpenCheckpoint(out)
			require.NoError(t, err, "a complete output")
			ck.Close()
			entries, err := os.ReadDir(parent)
			require.NoError(t, err)
			require.Len(t, entries, 1, "only -out")
		})
	}
}

// TestRandomInterrupted: -random writes through the same work directory and rename:
// SIGINT while it writes leaves nothing (it left 4 files / 580 MB in place); at the
// rename, the output is whole.
func TestRandomInterrupted(t *testing.T) {
	cfg := randomConfig(t)
	parent := t.TempDir()
	out := filepath.Join(parent, "r")
	c := child(t, "scratch", "-random", cfg, "-out", out)
	c.Signal(t, os.Interrupt)
	code, stderr := c.Exit(t, 2*time.Minute)
	require.Equal(t, 130, code, stderr)
	require.Contains(t, stderr, "quantize: interrupt: stopped, removed "+parent)
	entries, err := os.ReadDir(parent)
	require.NoError(t, err)
	require.Empty(t, entries, "nothing left beside -out")

	c = child(t, "before-rename", "-random", cfg, "-out", out)
	c.Signal(t, os.Interrupt)
	code, stderr = c.Exit(t, 2*time.Minute)
	require.Equal(t, exitOK, code, stderr)
	ck, err := checkpoint.OpenCheckpoint(out)
	require.NoError(t, err)
	ck.Close()
}
