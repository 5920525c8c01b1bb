package graph

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/ingotml/ingot/alloc"
	"github.com/ingotml/ingot/kernels"
)

// gatedDevice is a Submitter whose batch i completes when the test closes gate i, and
// fails then with errs[i]. It logs its submissions and its waits' returns.
type gatedDevice struct {
	mu    sync.Mutex
	log   []string
	gates map[int]chan struct{}
	errs  map[int]error
}

func (d *gatedDevice) Name() string                 { return "gated" }
func (d *gatedDevice) Provider() alloc.Provider     { return nil }
func (d *gatedDevice) Run(_ []kernels.Launch) error { panic("Run: the executor must Submit") }

func (d *gatedDevice) Submit(batch []kernels.Launch) (<-chan struct{}, func() error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	i := len(d.gates) + 1
	gate := make(chan struct{})
	d.gates[i] = gate
	d.log = append(d.log, fmt.Sprintf("submit %d", i))
	return gate, func() error {
		<-gate
		d.mu.Lock()
		defer d.mu.Unlock()
		d.log = append(d.log, fmt.Sprintf("wait %d", i))
		return d.errs[i]
	}
}

func (d *gatedDevice) logged() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.log)
}

func (d *gatedDevice) open(i int) {
	d.mu.Lock()
	defer d.mu.Unlock()
	close(d.gates[i])
}

// eventually fails t unless cond holds within a second.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within a second", what)
		}
	}
}

// TestSubmitterOverlapsBatches: the executor submits batch 2 while the device still
// runs batch 1 (which is not published done until the device finishes it); batch 1's
// failure is its own error, batch 2 (submitted before the failure was known) is failed
// with it, batch 3 is not submitted; and a batch in flight with none after it is
// published when the device finishes, without another batch to push it. The old
// executor called Run, which returned only when its batch had completed.
func TestSubmitterOverlapsBatches(t *testing.T) {
	boom := errors.New("metal: command buffer of launches 0 to 0 of 1 (k to k) failed: page fault")
	d := &gatedDevice{gates: map[int]chan struct{}{}, errs: map[int]error{1: boom}}
	e := &executor{dev: d, next: 1}
	e.cond.L = &e.mu
	ch := make(chan *batch, 2)
	go e.submitWorker(ch, d)

	ch <- &batch{seq: 1}
	ch <- &batch{seq: 2}
	eventually(t, "batch 2 submitted", func() bool { return len(d.logged()) == 2 })
	if got := d.logged(); !slices.Equal(got, []string{"submit 1", "submit 2"}) {
		t.Fatalf("log %q", got)
	}
	if e.doneSeq.Load() != 0 {
		t.Fatalf("batch %d published done before the device finished it", e.doneSeq.Load())
	}

	d.open(1)
	e.wait(1)
	if err := e.takeErr(); err != boom {
		t.Fatalf("batch 1's error = %v, want %v", err, boom)
	}
	ch <- &batch{seq: 3} // after the failure: skipped, not submitted
	d.open(2)
	returnsWithin(t, "waiting for batch 3", func() { e.wait(3) })
	if got := d.logged(); !slices.Equal(got, []string{"submit 1", "submit 2", "wait 1", "wait 2"}) {
		t.Fatalf("log %q", got)
	}
	e.mu.Lock()
	fails := slices.Clone(e.fails)
	e.mu.Unlock()
	if len(fails) != 1 || fails[0].from != 1 || fails[0].to != math.MaxUint64 || fails[0].err != boom {
		t.Fatalf("failures %+v: want one, from batch 1 on, batch 1's error", fails)
	}
	if err := e.takeErr(); err != nil {
		t.Fatalf("a second error %v: batch 2 fails with batch 1's", err)
	}

	// The graph closes the failure's range; batch 4 runs again, and is published when
	// the device finishes it, with nothing after it.
	e.mu.Lock()
	e.next = 4 // the graph has opened batches 1 to 3
	e.mu.Unlock()
	e.failures(nil)
	ch <- &batch{seq: 4}
	eventually(t, "batch 4 submitted", func() bool { return len(d.logged()) == 5 })
	d.open(3)
	returnsWithin(t, "waiting for batch 4", func() { e.wait(4) })
	close(ch)
	if got := d.logged(); !slices.Equal(got[4:], []string{"submit 3", "wait 3"}) {
		t.Fatalf("log %q", got)
	}
}
