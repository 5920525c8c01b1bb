package graph

import (
	"runtime"
	"sync"

	"github.com/ingotml/ingot/alloc"
	"github.com/ingotml/ingot/kernels"
)

// batch is a run of launches submitted together.
type batch struct {
	seq      uint64
	launches []kernels.Launch
}

// executor owns the worker goroutine. It does not point back at the Graph, so an
// unreachable Graph can be cleaned up and its worker stopped.
type executor struct {
	dev   Device
	alloc *alloc.Allocator
	sync  bool

	cur       *batch
	next      uint64 // seq of the next batch to open
	submitted uint64 // seq of the newest submitted batch
	ch        chan *batch
	pool      sync.Pool

	mu   sync.Mutex
	cond sync.Cond
	done uint64
	err  error
}

type execRef struct{ e *executor }

func (e *executor) start(g *Graph, opt Options) {
	e.dev = g.dev
	e.alloc = g.alloc
	e.sync = opt.Sync
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
	go e.worker(e.ch)
	runtime.AddCleanup(g, func(ch chan *batch) { close(ch) }, e.ch)
}

// current returns the batch being filled, opening one if needed.
func (e *executor) current() *batch {
	if e.cur == nil {
		b, _ := e.pool.Get().(*batch)
		if b == nil {
			b = &batch{}
		}
		b.seq = e.next
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

func (e *executor) worker(ch chan *batch) {
	// Metal wants one OS thread for autorelease pools; harmless on the CPU.
	runtime.LockOSThread()
	for b := range ch {
		e.run(b)
	}
}

// run executes b and publishes its completion.
func (e *executor) run(b *batch) {
	err := e.dev.Run(b.launches)
	for i := range b.launches {
		l := &b.launches[i]
		for j := 0; j < l.NArgs; j++ {
			l.Args[j].Data = nil // drop buffer references; the rest is overwritten on reuse
		}
		l.Kernel, l.Params, l.NArgs = nil, nil, 0
	}
	b.launches = b.launches[:0]
	e.mu.Lock()
	e.done = b.seq
	if err != nil && e.err == nil {
		e.err = err
	}
	e.cond.Broadcast()
	e.mu.Unlock()
	e.pool.Put(b)
}

// completed returns the newest completed batch.
func (e *executor) completed() uint64 {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.done
}

// wait blocks until batch seq has completed.
func (e *executor) wait(seq uint64) {
	e.mu.Lock()
	for e.done < seq {
		e.cond.Wait()
	}
	e.mu.Unlock()
}

func (e *executor) takeErr() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	err := e.err
	e.err = nil
	return err
}
