// Package childtest runs a command in a child process for the tests that signal it
// (cmd/decode, cmd/quantize, cmd/playground): start it, read its output line by line
// until it reaches the point the test signals at, signal it, and read how it exited.
package childtest

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Child is a command running in a child process, one of whose output streams is
// read as it comes (a goroutine keeps every line, so the child never blocks on a
// full pipe while the test waits).
type Child struct {
	cmd   *exec.Cmd
	mu    sync.Mutex
	lines []string
	next  int           // the first line Until has not looked at
	more  chan struct{} // a line came (capacity 1)
	eof   chan struct{} // closed once the stream ended
}

// Stops are the signals the commands stop on, the ones their signal tests send.
var Stops = []syscall.Signal{syscall.SIGINT, syscall.SIGTERM}

// Build builds the command in package directory dir into a temporary binary and
// returns its path.
func Build(t testing.TB, dir string) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "cmd")
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Dir = dir
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		t.Fatalf("go build %s: %v", dir, err)
	}
	return bin
}

// Start starts name with args, env added to the test's environment, and reads its
// stdout, or its stderr when stderr is set.
func Start(t testing.TB, stderr bool, env []string, name string, args ...string) *Child {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	pipe := cmd.StdoutPipe
	if stderr {
		pipe = cmd.StderrPipe
	}
	r, err := pipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &Child{cmd: cmd, more: make(chan struct{}, 1), eof: make(chan struct{})}
	go func() {
		defer close(c.eof)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			c.mu.Lock()
			c.lines = append(c.lines, sc.Text())
			c.mu.Unlock()
			select {
			case c.more <- struct{}{}:
			default:
			}
		}
	}()
	return c
}

// Until reads lines until match returns true for one. The test fails, and the child
// is killed, when the stream ends first or d passes.
func (c *Child) Until(t testing.TB, d time.Duration, match func(line string) bool) {
	t.Helper()
	deadline := time.After(d)
	for {
		c.mu.Lock()
		for c.next < len(c.lines) {
			l := c.lines[c.next]
			c.next++
			if match(l) {
				c.mu.Unlock()
				return
			}
		}
		c.mu.Unlock()
		select {
		case <-c.more:
		case <-c.eof:
			// Lines read before the end may still be unseen.
			c.mu.Lock()
			unseen := c.next < len(c.lines)
			c.mu.Unlock()
			if !unseen {
				c.cmd.Wait()
				t.Fatalf("the child's output ended before the point waited for:\n%s", c.Output())
			}
		case <-deadline:
			c.kill()
			t.Fatalf("the child did not reach the point waited for in %v:\n%s", d, c.Output())
		}
	}
}

// Signal sends sig to the child.
func (c *Child) Signal(t testing.TB, sig os.Signal) {
	t.Helper()
	if err := c.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
}

// Exit waits, at most d, for the child's stream to end and the child to exit, and
// returns its exit code (0 for success) and every line of the stream. Past d the
// child is killed and the test fails.
func (c *Child) Exit(t testing.TB, d time.Duration) (int, string) {
	t.Helper()
	select {
	case <-c.eof:
	case <-time.After(d):
		c.kill()
		t.Fatalf("still running %v later:\n%s", d, c.Output())
	}
	err := c.cmd.Wait()
	if err == nil {
		return 0, c.Output()
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) {
		t.Fatalf("%v:\n%s", err, c.Output())
	}
	return exit.ExitCode(), c.Output()
}

// Lines returns the lines read so far.
func (c *Child) Lines() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.lines...)
}

// Output returns the lines read so far, each ended by a newline.
func (c *Child) Output() string {
	var b strings.Builder
	for _, l := range c.Lines() {
		b.WriteString(l + "\n")
	}
	return b.String()
}

// kill ends the child; Wait closes the stream, which ends the reader too.
func (c *Child) kill() {
	_ = c.cmd.Process.Kill()
	_ = c.cmd.Wait()
}

// Ready is the line a test's child writes to stderr when it reaches the point where
// it pauses to be signalled (WriteReady).
const Ready = "childtest: ready"

// WriteReady writes Ready to stderr: the child's side of Until(IsReady).
func WriteReady() { os.Stderr.WriteString(Ready + "\n") }

// IsReady matches the Ready line.
func IsReady(line string) bool { return line == Ready }
