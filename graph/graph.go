package graph

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"weak"

	"github.com/ingotml/ingot/alloc"
	"github.com/ingotml/ingot/kernels"
)

// Graph is a lazy-array context: an allocator, a device, and the nodes built on them
// (MLX's default stream). Build ops, Eval, read and Synchronize from one goroutine at a
// time; the device runs kernels on an internal worker goroutine.
type Graph struct {
	alloc *alloc.Allocator
	dev   Device

	handles []handleRef // every handle not yet known to be dead
	free    []*Node     // node pool
	nodes   int         // live nodes
	epoch   uint32      // tape marks
	tape    []*Node
	stack   []*Node

	buildErr error // first allocator failure while building, returned by the next Eval
	sweptGen uint64
	scopes   []*scope
	spare    []*scope // closed scopes, kept for their slices
	deferred []*data  // owner-less buffers still bound by launches in flight
	doneSeq  uint64   // newest completed batch, as last read

	exec    *executor
	fails   []failure // failed batch ranges, as last learned from the executor
	failVer uint32    // the executor's failVersion when fails was copied

	// mu serializes Eval, AsyncEval, Bytes and Synchronize, so two goroutines that
	// evaluate on one graph wait for each other instead of corrupting it.
	mu sync.Mutex

	cen *census // creation sites of nodes, when the census is on
}

type handleRef struct {
	w weak.Pointer[Handle]
	n *Node
}

// Options configure a new Graph.
type Options struct {
	Alloc alloc.Config
	// Sync runs kernels on the calling goroutine instead of the worker (deterministic
	// timing for debugging; counts after Synchronize are the same either way).
	Sync bool
	// InFlight bounds the batches submitted but not finished (default 2).
	InFlight int
}

// New makes a graph on dev.
func New(dev Device, opt Options) *Graph {
	g := &Graph{dev: dev}
	cfg := opt.Alloc
	if rl, ok := dev.(ResourceLimiter); ok && cfg.ResourceLimit <= 0 {
		// A bad environment value leaves the default (New has no error path).
		if n, err := alloc.ResourceLimitFor(0, rl.ResourceLimit()); err == nil {
			cfg.ResourceLimit = n
		}
	}
	g.alloc = alloc.New(dev.Provider(), cfg)
	// The allocator outlives nothing but must not keep g alive (the worker goroutine
	// reaches the allocator), so the reclaimer holds g weakly.
	wg := weak.Make(g)
	g.alloc.SetReclaimer(func() {
		if g := wg.Value(); g != nil {
			g.reclaim()
		}
	})
	g.exec = &executor{}
	g.exec.start(g, opt)
	return g
}

// NewCPU makes a graph on the CPU device.
func NewCPU(opt Options) *Graph { return New(CPU(), opt) }

var (
	defaultOnce  sync.Once
	defaultGraph *Graph
)

// Default returns the process-wide CPU graph, made on first use.
func Default() *Graph {
	defaultOnce.Do(func() { defaultGraph = NewCPU(Options{}) })
	return defaultGraph
}

// Allocator returns the graph's allocator (for probes: counts, memory, histogram).
func (g *Graph) Allocator() *alloc.Allocator { return g.alloc }

// Device returns the graph's device.
func (g *Graph) Device() Device { return g.dev }

// newNode takes a node from the pool.
func (g *Graph) newNode(l kernels.Layout) *Node {
	var n *Node
	if k := len(g.free); k > 0 {
		n = g.free[k-1]
		g.free = g.free[:k-1]
	} else {
		n = new(Node)
	}
	n.layout = l
	n.inputs = n.inl[:0]
	g.nodes++
	if g.cen != nil {
		g.cen.created(n)
	}
	return n
}

// handle wraps n in a new handle: tracked outside a scope, held by the scope inside one.
func (g *Graph) handle(n *Node) *Handle {
	h := &Handle{n: n, g: g, gen: n.gen}
	if k := len(g.scopes); k > 0 {
		s := g.scopes[k-1]
		s.nodes = append(s.nodes, n)
		n.refs++
		return h
	}
	g.track(h)
	return h
}

// track makes h hold one reference, released once h is found unreachable.
func (g *Graph) track(h *Handle) {
	h.tracked = true
	h.n.refs++
	h.slot = len(g.handles)
	g.handles = append(g.handles, handleRef{weak.Make(h), h.n})
}

// Share returns a new handle on h's node (held by the current scope, or tracked).
func (g *Graph) Share(h *Handle) *Handle { return g.handle(h.node()) }

// Keep makes h outlive the current scope (a no-op for tracked handles).
func (g *Graph) Keep(h *Handle) *Handle {
	h.node()
	if !h.tracked {
		g.track(h)
	}
	return h
}

// scope holds the nodes built while it is open.
type scope struct{ nodes []*Node }

// BeginScope opens a scope: until EndScope, new arrays are held by the scope instead of
// being tracked by the garbage collector, which is much cheaper (no weak pointer per
// array). EndScope releases them; what must outlive the scope is passed to Keep. This is
// how a Python function's locals die at return; the decode loop builds each step in one.
func (g *Graph) BeginScope() {
	var s *scope
	if k := len(g.spare); k > 0 { // reuse a closed scope's slice: steps build thousands of nodes
		s, g.spare = g.spare[k-1], g.spare[:k-1]
	} else {
		s = &scope{}
	}
	g.scopes = append(g.scopes, s)
}

// EndScope closes the innermost scope and drops its references.
func (g *Graph) EndScope() {
	k := len(g.scopes)
	if k == 0 {
		graphPanic("EndScope without BeginScope")
	}
	s := g.scopes[k-1]
	g.scopes = g.scopes[:k-1]
	for i, n := range s.nodes {
		s.nodes[i] = nil
		g.decRef(n)
	}
	s.nodes = s.nodes[:0]
	g.spare = append(g.spare, s)
}

// decRef drops one reference and frees what dies, iteratively (chains can be long).
func (g *Graph) decRef(n *Node) {
	n.refs--
	if n.refs > 0 {
		return
	}
	stack := append(g.stack[:0], n)
	for len(stack) > 0 {
		n := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for _, in := range n.inputs {
			in.refs--
			if in.refs == 0 {
				stack = append(stack, in)
			}
		}
		if g.cen != nil {
			g.cen.freed(n)
		}
		g.dropData(n)
		gen := n.gen + 1
		*n = Node{gen: gen}
		g.free = append(g.free, n)
		g.nodes--
	}
	g.stack = stack[:0]
}

// dropData releases n's ownership of its buffer.
func (g *Graph) dropData(n *Node) {
	d := n.data
	if d == nil {
		return
	}
	n.data = nil
	d.owners--
	g.release(d)
}

// release frees d's buffer once no owner is left: now if no launch in flight binds
// it, else when its batch has completed (see freeDeferred).
func (g *Graph) release(d *data) {
	if d.owners > 0 {
		return
	}
	if d.lastUse > g.doneSeq {
		g.doneSeq = g.exec.completed()
		if d.lastUse > g.doneSeq {
			g.deferred = append(g.deferred, d)
			return
		}
	}
	g.alloc.Free(d.buf)
	d.buf = alloc.Buffer{}
}

// freeDeferred frees the deferred buffers whose batches have completed.
func (g *Graph) freeDeferred() {
	if len(g.deferred) == 0 {
		return
	}
	g.doneSeq = g.exec.completed()
	keep := g.deferred[:0]
	for _, d := range g.deferred {
		if d.lastUse > g.doneSeq {
			keep = append(keep, d)
			continue
		}
		g.alloc.Free(d.buf)
		d.buf = alloc.Buffer{}
	}
	clear(g.deferred[len(keep):])
	g.deferred = keep
}

// sweep drops the references of handles the garbage collector found unreachable.
// Exact right after runtime.GC.
func (g *Graph) sweep() {
	live := g.handles[:0]
	for _, r := range g.handles {
		if r.n == nil {
			continue // released explicitly
		}
		h := r.w.Value()
		if h == nil {
			g.decRef(r.n)
			continue
		}
		h.slot = len(live)
		live = append(live, r)
	}
	clear(g.handles[len(live):])
	g.handles = live
	g.sweptGen = gcGen.Load()
}

// Release drops h's reference now instead of when the garbage collector finds h
// unreachable: what Python does when a variable is reassigned. The caller promises h
// is not used again (a later use panics). Releasing an untracked (scope-held) handle
// only marks it; the scope still drops its reference at its end.
func (g *Graph) Release(h *Handle) {
	if h == nil || h.released {
		return
	}
	n := h.node()
	h.released = true
	if !h.tracked {
		return
	}
	g.handles[h.slot].n = nil
	g.decRef(n)
}

// collect forces a full garbage collection and sweeps, so that every handle the program
// no longer reaches releases its node.
func (g *Graph) collect() {
	runtime.GC()
	g.sweep()
}

// reclaim is the allocator's last resort before the resource-limit error: finish the
// work in flight (buffers it binds are freed when it completes), and if live buffers
// still reach the limit, collect dead handles (a full garbage collection).
func (g *Graph) reclaim() {
	g.exec.flush()
	g.exec.wait(g.exec.submitted)
	g.freeDeferred()
	if g.alloc.LiveBufferCount() < g.alloc.ResourceLimit() {
		return // the allocator's purge of the cache is now enough: no collection needed
	}
	g.collect()
	g.freeDeferred()
}

// Synchronize waits for all scheduled work, then collects dead handles: afterwards the
// allocator's counts are exact and deterministic. It returns any error of the device.
func (g *Graph) Synchronize() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.exec.flush()
	g.exec.wait(g.exec.submitted)
	g.freeDeferred()
	g.collect()
	g.freeDeferred()
	return g.takeErr()
}

// syncFailures learns of the batches that failed since the last look (cheap when
// none did: one atomic load).
func (g *Graph) syncFailures() {
	if v := g.exec.failVersion.Load(); v != g.failVer {
		g.failVer = v
		g.fails = g.exec.failures(g.fails)
	}
}

// settle marks n failed if the batch that computes it failed (or was skipped after
// a failure): its buffer may be unwritten, so n carries the batch's error instead.
func (g *Graph) settle(n *Node) {
	if n.state != stateScheduled || len(g.fails) == 0 {
		return
	}
	for i := len(g.fails) - 1; i >= 0; i-- {
		if f := &g.fails[i]; n.seq >= f.from && n.seq <= f.to {
			n.err = f.err
			n.state = stateFailed
			return
		}
	}
}

// takeErr returns and clears the pending build or device error.
func (g *Graph) takeErr() error {
	err := g.buildErr
	g.buildErr = nil
	if err == nil {
		err = g.exec.takeErr()
	}
	return err
}

// Stats are the graph's own counts, next to the allocator's.
type Stats struct {
	Nodes   int // live nodes (evaluated or not)
	Handles int // handles not yet found dead (exact after Synchronize)
}

// Stats returns the graph's counts.
func (g *Graph) Stats() Stats { return Stats{Nodes: g.nodes, Handles: len(g.handles)} }

// gcGen counts garbage collections seen by a self-renewing cleanup, so graphs sweep
// after natural collections without forcing any.
var gcGen atomic.Uint64

type gcSentinel struct{ _ [16]byte }

func armGCSentinel() {
	s := new(gcSentinel)
	runtime.AddCleanup(s, func(int) {
		gcGen.Add(1)
		armGCSentinel()
	}, 0)
}

func init() { armGCSentinel() }

// maybeSweep sweeps when a collection happened since the last sweep.
func (g *Graph) maybeSweep() {
	if gcGen.Load() != g.sweptGen {
		g.sweep()
	}
}

// GraphError reports misuse of the graph API (mixing graphs, bad layouts).
type GraphError struct{ Msg string }

// Error formats the misuse.
func (e *GraphError) Error() string { return "graph: " + e.Msg }

func graphPanic(format string, args ...any) {
	panic(&GraphError{Msg: fmt.Sprintf(format, args...)})
}
