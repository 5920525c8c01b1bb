package graph

import (
	"errors"
	"testing"
	"time"

	"github.com/ingotml/ingot/alloc"
	"github.com/ingotml/ingot/kernels"
)

// lockedExecutor is a CPU-like executor with batch done finished, whose lock is held
// as the worker holds it while it publishes a batch: the caller must not need it to
// learn what is already done.
func lockedExecutor(done uint64) *executor {
	e := &executor{inline: true}
	e.cond.L = &e.mu
	e.done = done
	e.doneSeq.Store(done)
	e.mu.Lock()
	return e
}

// returnsWithin fails t unless f returns within a second.
func returnsWithin(t *testing.T, what string, f func()) {
	t.Helper()
	ch := make(chan struct{})
	go func() { f(); close(ch) }()
	select {
	case <-ch:
	case <-time.After(time.Second):
		t.Fatalf("%s blocked on the executor's lock", what)
	}
}

// TestWaitForFinishedBatchTakesNoLock: waiting for a batch that is already done, and
// asking for an error when none is pending, return without the executor's lock. A
// caller that blocks on it sleeps, and on a virtual machine an idle core can take a
// millisecond to wake, while the worker's products wait for it to help.
func TestWaitForFinishedBatchTakesNoLock(t *testing.T) {
	e := lockedExecutor(3)
	defer e.mu.Unlock()
	returnsWithin(t, "wait for a finished batch", func() { e.wait(2); e.wait(3) })
	returnsWithin(t, "takeErr with no error pending", func() {
		if err := e.takeErr(); err != nil {
			t.Errorf("takeErr = %v, want nil", err)
		}
	})
}

// TestFailedBatchErrorVisibleAtDone: the worker publishes a failed batch's error before
// its completion, so a caller that sees the batch done without the lock finds the error.
func TestFailedBatchErrorVisibleAtDone(t *testing.T) {
	boom := errors.New("boom")
	e := &executor{inline: true, sync: true, dev: failingDevice{boom}}
	e.cond.L = &e.mu
	e.run(&batch{seq: 1})
	e.wait(1)
	if err := e.takeErr(); !errors.Is(err, boom) {
		t.Fatalf("takeErr after the failed batch = %v, want %v", err, boom)
	}
	if err := e.takeErr(); err != nil {
		t.Fatalf("takeErr a second time = %v, want nil (taken once)", err)
	}
}

// failingDevice fails every batch with err.
type failingDevice struct{ err error }

func (failingDevice) Name() string                   { return "failing" }
func (failingDevice) Provider() alloc.Provider       { return nil }
func (d failingDevice) Run(_ []kernels.Launch) error { return d.err }
