package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// guard is the run's one signal handler: from the first flag read to the exit, SIGINT
// and SIGTERM come to it, never to the default action (which killed the process
// half-way, its scratch copy left behind). Until the output is published (one rename,
// under the guard's lock) a signal removes the work directory and the parents made for
// -out, and exits 128+n: the run leaves nothing. Once it is published the run is
// complete and finishes (a signal then is reported, and changes nothing).
type guard struct {
	mu        sync.Mutex
	work      *workDir // the run's work directory (nil before it exists)
	published bool
	late      os.Signal // a signal that came after the output was published
	stderr    io.Writer
	sigs      chan os.Signal
	done      chan struct{}
}

// beforePublish runs under the guard's lock just before the publishing rename, and
// afterPublish just after it, outside the lock; the interrupt tests signal there.
var beforePublish, afterPublish = func() {}, func() {}

// newGuard installs the run's signal handler.
func newGuard(stderr io.Writer) *guard {
	g := &guard{stderr: stderr, sigs: make(chan os.Signal, 1), done: make(chan struct{})}
	signal.Notify(g.sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		for {
			select {
			case sig := <-g.sigs:
				g.stop(sig)
			case <-g.done:
				return
			}
		}
	}()
	return g
}

// stop handles sig: before the output is published the run is removed and the process
// exits; after, the signal is noted.
func (g *guard) stop(sig os.Signal) {
	g.mu.Lock()
	if g.published {
		g.late = sig
		g.mu.Unlock()
		return
	}
	// The lock is kept to the exit: the output can no longer be published.
	what := "nothing written"
	if g.work != nil {
		g.work.removeAll(true)
		// A write in flight may have been making a directory as the removal ran: once
		// more, after it has failed on the missing directory.
		time.Sleep(50 * time.Millisecond)
		g.work.removeAll(true)
		what = "removed " + g.work.dir
	}
	fmt.Fprintf(g.stderr, "quantize: %v: stopped, %s\n", sig, what)
	os.Exit(128 + int(sig.(syscall.Signal)))
}

// close ends the handler; a signal after it has its default action (the run is over).
func (g *guard) close() {
	signal.Stop(g.sigs)
	close(g.done)
	g.mu.Lock()
	late := g.late
	g.mu.Unlock()
	if late != nil {
		fmt.Fprintf(g.stderr, "quantize: %v: arrived after the output was complete: kept it\n", late)
	}
}

// newWork makes the run's work directory beside out, under the guard (a signal from
// now on removes it).
func (g *guard) newWork(out string) (*workDir, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	w, err := newWorkDir(out)
	if err != nil {
		return nil, err
	}
	g.work = w
	return w, nil
}

// publish renames the finished output dir to out, under the guard's lock: a signal
// either comes before (and the run leaves nothing) or after (and the output is whole).
func (g *guard) publish(dir, out string) error {
	g.mu.Lock()
	beforePublish()
	err := publish(dir, out)
	g.published = err == nil
	g.mu.Unlock()
	if err == nil {
		afterPublish()
	}
	return err
}

// workDir is the hidden directory next to -out where quantize writes the scratch copy
// in mlx-lm's layout and the output, before renaming the output into place. It is
// removed when the run ends, fails or is interrupted, along with any parent
// directories of -out that the run created; nothing else is ever removed.
type workDir struct {
	dir  string
	made []string // parents of -out created for it, deepest first
	once sync.Once
}

// newWorkDir creates the work directory beside out (so the final rename stays on one
// file system). A directory that cannot be made there is a bad -out (exit 64).
func newWorkDir(out string) (*workDir, error) {
	parent := filepath.Dir(filepath.Clean(out))
	w := &workDir{}
	for p := parent; ; p = filepath.Dir(p) {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) || p == filepath.Dir(p) {
			break
		}
		w.made = append(w.made, p)
	}
	if err := os.MkdirAll(parent, 0o755); err != nil {
		w.removeAll(true)
		return nil, fmt.Errorf("%w: -out %s: %v", errUsage, out, unwrapPath(err))
	}
	dir, err := os.MkdirTemp(parent, ".quantize-"+filepath.Base(out)+"-")
	if err != nil {
		w.removeAll(true)
		return nil, fmt.Errorf("%w: -out %s: %v", errUsage, out, unwrapPath(err))
	}
	w.dir = dir
	return w, nil
}

// remove deletes the work directory and, when failed, the parents made for -out (only
// while empty), once.
func (w *workDir) remove(failed bool) {
	w.once.Do(func() { w.removeAll(failed) })
}

// removeAll is remove's deletion, which the signal handler may repeat.
func (w *workDir) removeAll(failed bool) {
	if w.dir != "" {
		os.RemoveAll(w.dir)
	}
	if failed {
		for _, p := range w.made {
			os.Remove(p)
		}
	}
}

// unwrapPath drops the *PathError's repetition of the path the message names.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
