package graph

import (
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/ingotml/ingot/alloc"
	"github.com/ingotml/ingot/kernels"
)

// batch is a run of launches submitted together.
type batch struct {
	seq      uint64
	launches []kernels.Launch
	bytes    int64 // of the new buffers its launches write (Graph.cut)
}

// executor owns the worker goroutine. It does not point back at the Graph, so an
// unreachable Graph can be cleaned up and its worker stopped.
type executor struct {
	dev   Device
	alloc *alloc.Allocator
	sync  bool
	// inline: the device may run on any goroutine (the CPU's; Metal keeps its own
	// thread), so a batch the caller is about to wait for runs on the caller when
	// nothing is in flight (see flushWait).
	inline bool
	// helper takes side work from the kernels while the caller waits (CPU only).
	helper kernels.Helper
	// doneSeq is done, readable without mu by a caller that helps while it waits.
	doneSeq atomic.Uint64

	cur       *batch
	next      uint64 // seq of the next batch to open
	submitted uint64 // seq of the newest submitted batch
	ch        chan *batch
	spare     []*batch // finished batches, kept with their launch arrays (guarded by mu)

	mu   sync.Mutex
	cond sync.Cond
	done uint64
	err  error

	// Failed batches. A batch whose Run fails may have left any of its outputs
	// unwritten, and batches queued after it may read them; so from a failure on,
	// every batch is skipped and failed (poisoned) until the graph learns of it and
	// closes the range at the newest batch it has opened (see failures). Later
	// batches run again: the graph fails, at scheduling, the nodes that read a
	// failed batch's buffers. The worker appends; the graph reads under mu.
	fails       []failure
	poisonUntil atomic.Uint64 // batches with seq <= poisonUntil are skipped (written under mu)
	errPending  atomic.Bool   // err is set (written under mu): takeErr's lock-free check
	failVersion atomic.Uint32 // bumped on every new failure
}

// failure is a run of failed batches, from..to inclusive, and the error that failed
// the first of them. to is math.MaxUint64 until the graph closes the range.
type failure struct {
	from, to uint64
	err      error
}

type execRef struct{ e *executor }

func (e *executor) start(g *Graph, opt Options) {
	e.dev = g.dev
	e.alloc = g.alloc
	e.sync = opt.Sync
	_, e.inline = g.dev.(*cpuDevice)
	e.cond.L = &e.mu
	e.next = 1
	if e.sync {
		return
	}
	n := opt.InFlight
	if n <= 0 {
		n = 2
	}
	e.ch = make(chan *batch, n)
	if sub, ok := g.dev.(Submitter); ok {
		go e.submitWorker(e.ch, sub)
	} else {
		go e.worker(e.ch)
	}
	runtime.AddCleanup(g, func(ch chan *batch) { close(ch) }, e.ch)
}

// current returns the batch being filled, opening one if needed.
func (e *executor) current() *batch {
	if e.cur == nil {
		// A launch record is large (MaxArgs layouts): reuse finished batches' arrays
		// rather than regrow and fault in megabytes per batch (a sync.Pool would drop
		// them at every collection).
		var b *batch
		e.mu.Lock()
		if k := len(e.spare); k > 0 {
			b = e.spare[k-1]
			e.spare = e.spare[:k-1]
		}
		e.mu.Unlock()
		if b == nil {
			b = &batch{}
		}
		b.seq = e.next
		b.bytes = 0
		e.next++
		e.cur = b
	}
	return e.cur
}

// flush submits the batch being filled.
func (e *executor) flush() {
	b := e.cur
	if b == nil {
		return
	}
	e.cur = nil
	e.submitted = b.seq
	if e.sync {
		e.run(b)
		return
	}
	e.ch <- b
}

// flushWait submits the batch being filled for a caller that waits for it next. When
// the worker has nothing in flight the caller runs it itself: waking the worker, and
// moving every launch record the caller just wrote to the worker's core, would only
// make the caller wait longer. The order of batches is kept: this batch is the only one.
func (e *executor) flushWait() {
	b := e.cur
	if b == nil || e.sync || !e.inline {
		e.flush()
		return
	}
	e.mu.Lock()
	idle := e.done == e.submitted
	e.mu.Unlock()
	if !idle {
		e.flush()
		return
	}
	e.cur = nil
	e.submitted = b.seq
	e.run(b)
}

func (e *executor) worker(ch chan *batch) {
	// Metal wants one OS thread for autorelease pools; harmless on the CPU.
	runtime.LockOSThread()
	for b := range ch {
		e.run(b)
	}
}

// submitted is a batch a Submitter runs: done and wait are its Submit's.
type submitted struct {
	b    *batch
	done <-chan struct{}
	wait func() error
}

// submitWorker is the worker of a Submitter: it submits each batch as it comes,
// before it waits for the one the device is running, so the device runs one batch
// while the next is encoded; a batch is published (complete) only once the device has
// finished it, so its buffers are not reused or freed while the device may read them.
// An error reaches the batch that caused it; a batch submitted before an earlier one's
// failure was known is failed with it, as the synchronous worker skips it.
func (e *executor) submitWorker(ch chan *batch, dev Submitter) {
	runtime.LockOSThread()
	var fly *submitted // the batch the device runs, if any
	land := func() {
		e.complete(fly.b, fly.wait())
		fly = nil
	}
	for {
		var b *batch
		ok := true
		if fly == nil {
			b, ok = <-ch
		} else {
			select {
			case b, ok = <-ch:
			case <-fly.done:
				land()
				continue
			}
		}
		if !ok {
			if fly != nil {
				land()
			}
			return
		}
		if b.seq <= e.poisonUntil.Load() {
			if fly != nil {
				land()
			}
			e.complete(b, nil)
			continue
		}
		done, wait := dev.Submit(b.launches)
		if fly != nil {
			land()
		}
		fly = &submitted{b, done, wait}
	}
}

// run executes b, unless an earlier failure poisons it, and publishes its completion.
func (e *executor) run(b *batch) {
	var err error
	if b.seq > e.poisonUntil.Load() {
		err = e.dev.Run(b.launches)
	}
	e.complete(b, err)
}

// complete publishes b's completion with its error (nil when it was skipped). A batch
// that ran while an earlier one failed (a Submitter's) counts as failed with it: its
// error is that failure's.
func (e *executor) complete(b *batch, err error) {
	if b.seq <= e.poisonUntil.Load() {
		err = nil // within an earlier failure's range, which fails it
	}
	for i := range b.launches {
		l := &b.launches[i]
		for j := 0; j < l.NArgs; j++ {
			l.Args[j].Data = nil // drop buffer references; the rest is overwritten on reuse
		}
		l.Kernel, l.Params, l.NArgs = nil, nil, 0
	}
	b.launches = b.launches[:0]
	e.mu.Lock()
	if err != nil {
		e.fails = append(e.fails, failure{from: b.seq, to: math.MaxUint64, err: err})
		e.poisonUntil.Store(math.MaxUint64)
		e.failVersion.Add(1)
		if e.err == nil {
			e.err = err
			e.errPending.Store(true)
		}
	}
	e.spare = append(e.spare, b)
	e.done = b.seq
	// Last: a caller that sees doneSeq without taking mu (wait's fast path) also sees
	// the batch's outputs and its failure, if any.
	e.doneSeq.Store(b.seq)
	e.cond.Broadcast()
	e.mu.Unlock()
}

// wait blocks until batch seq has completed.
//
// A batch already done returns without taking mu: the worker holds it while it
// publishes a batch, a caller that blocks on it sleeps, and a sleeping core can take
// hundreds of microseconds to wake on a virtual machine, while the worker's products
// wait for it to take their other half.
func (e *executor) wait(seq uint64) {
	if e.doneSeq.Load() >= seq {
		return
	}
	if e.inline && !e.sync {
		e.helpUntil(seq)
		if e.doneSeq.Load() >= seq {
			return
		}
	}
	e.mu.Lock()
	for e.done < seq {
		e.cond.Wait()
	}
	e.mu.Unlock()
}

// helpNow runs the kernels' side work on offer, if any, on the caller between the
// steps of building or scheduling a graph: with AsyncEval the caller builds the next
// step while the worker runs this one, and a product whose half waits for a helper
// until the caller next waits runs on one core meanwhile (a 0.8B decode step: about
// nine products a token, several hundred microseconds each). Nothing on offer costs
// one atomic load.
func (e *executor) helpNow() {
	if e.inline && !e.sync {
		e.helper.Help()
	}
}

// helpIdle is how long a waiting caller goes on offering help without being given any
// before it sleeps (a decode step offers work every few tens of microseconds). At 5 ms
// a 0.8B decode's caller slept in 2 to 7 steps of 40 (a stall of the worker's core, a
// host's preemption), and the products left in those steps ran on one core.
const helpIdle = 50 * time.Millisecond

// helpUntil runs the kernels' side work (kernels.Helper) while batch seq is in flight:
// the caller would otherwise sleep on the other core while the worker runs its batch.
// It returns when the batch is done, or when no work came for helpIdle.
func (e *executor) helpUntil(seq uint64) {
	idle := time.Now()
	for i := 0; e.doneSeq.Load() < seq; i++ {
		if e.helper.Help() {
			idle = time.Now()
		} else if i%256 == 0 {
			if time.Since(idle) > helpIdle {
				return
			}
			if i%(1<<16) == 0 { // every few hundred microseconds, not every poll
				runtime.Gosched() // a collector's worker may want this core
			}
		}
	}
}

func (e *executor) takeErr() error {
	if !e.errPending.Load() { // set before the failed batch's doneSeq (see run)
		return nil
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	err := e.err
	e.err = nil
	e.errPending.Store(false)
	return err
}

// failures closes an open failure range at the newest batch opened so far (every
// batch up to it that has not run yet will be skipped) and returns a copy of the
// ranges. Called on the graph's goroutine, which owns next: after it, the graph
// knows every batch that is or will be failed among those it has opened, and fails
// the nodes that read them when it schedules.
func (e *executor) failures(dst []failure) []failure {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.poisonUntil.Load() == math.MaxUint64 {
		e.poisonUntil.Store(e.next - 1)
		e.fails[len(e.fails)-1].to = e.next - 1
	}
	return append(dst[:0], e.fails...)
}
