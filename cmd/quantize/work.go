package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
)

// workDir is the hidden directory next to -out where quantize writes the scratch copy
// in mlx-lm's layout and the output, before renaming the output into place. It is
// removed when the run ends, fails or is interrupted (SIGINT, SIGTERM), along with any
// parent directories of -out that the run created; nothing else is ever removed.
type workDir struct {
	dir     string
	made    []string // parents of -out created for it, deepest first
	release func()   // stops the signal handler
	once    sync.Once
}

// newWorkDir creates the work directory beside out (so the final rename stays on one
// file system) and arranges its removal on SIGINT and SIGTERM.
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
		w.remove(true)
		return nil, err
	}
	dir, err := os.MkdirTemp(parent, ".quantize-"+filepath.Base(out)+"-")
	if err != nil {
		w.remove(true)
		return nil, err
	}
	w.dir = dir
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	stop := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			w.remove(true)
			fmt.Fprintf(os.Stderr, "quantize: %v: stopped, removed %s\n", sig, dir)
			os.Exit(128 + int(sig.(syscall.Signal)))
		case <-stop:
		}
	}()
	w.release = func() { signal.Stop(sigs); close(stop) }
	return w, nil
}

// remove deletes the work directory and, when failed, the parents made for -out (only
// while empty). It runs once, from the run's end or from the signal handler.
func (w *workDir) remove(failed bool) {
	w.once.Do(func() {
		if w.release != nil {
			w.release()
		}
		if w.dir != "" {
			os.RemoveAll(w.dir)
		}
		if failed {
			for _, p := range w.made {
				os.Remove(p)
			}
		}
	})
}
