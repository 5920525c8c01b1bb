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
	ns      store[Node] // nodes, pointer-free
	ds      store[data] // buffers shared by nodes
	params  []any       // node params by index (0: nil); freed slots listed in freeP
	freeP   []uint32
	errs    map[nodeID]error           // errors of failed nodes
	wide    map[nodeID][]nodeID        // input edges of nodes with more than inlineInputs
	klist   []*kernels.Kernel          // kernel table by id, cached from kernelTable
	kids    map[*kernels.Kernel]uint16 // kernel ids, cached
	nodes   int                        // live nodes
	created uint64                     // nodes ever made (Stats.Created)
	epoch   uint32                     // tape marks
	tape    []*Node
	stack   []*Node

	buildErr              error // first allocator failure while building, returned by the next Eval
	sweptGen              uint64
	collections, reclaims int   // forced collections (Stats)
	explicit              bool  // Options.ExplicitRelease
	fastPrompts           bool  // Options.FastPrompts
	batchBytes            int64 // Options.BatchBytes (negative: never cut)
	scopes                []*scope
	hchunk                []Handle // the rest of the current chunk of scope-held handles
	spare                 []*scope // closed scopes, kept for their slices
	deferred              []dataID // owner-less buffers still bound by launches in flight
	doneSeq               uint64   // newest batch the graph has waited for (see waitFor)

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
	// BatchBytes bounds an evaluation's scratch: once the batch being filled has
	// allocated this many bytes of new buffers, the graph submits it, waits for the
	// batch before it and frees the buffers that batch was the last to bind, so an
	// intermediate returns to the allocator once its last consumer has run (see
	// Graph.cut). 0 means DefaultBatchBytes; a negative value never cuts (one batch an
	// evaluation, every intermediate held until its end).
	BatchBytes int64
	// ExplicitRelease is the program's promise that it releases every tracked handle
	// it drops (Release, tensor.Assign), as Python's refcounting drops an array the
	// moment its last name goes. Synchronize and the reclaimer then never force a
	// garbage collection, whose cost grows with everything the heap holds (a dead
	// lazy chain included); they only sweep what natural collections found. A handle
	// dropped without a release keeps its node, and its buffers count as live, until
	// a natural collection finds it.
	ExplicitRelease bool
	// FastPrompts lets a prompt's products (two or more tokens a sequence) take the
	// CPU's dot-product instructions where it has them: at 4 and 8 bits the int8 path
	// (AVX512-VNNI, kernels/qmm8.go: x rounded to bytes per group), for bfloat16
	// weights and activations the pair-dot path (AVX512_BF16, kernels/bf16dot.go: the
	// same exact products, summed in another order). Both change a prompt's values
	// (the int8 path noticeably, see docs/performance.md), so it is off by default; a
	// decode step never takes them.
	FastPrompts bool
}

// DefaultBatchBytes is Options.BatchBytes when it is 0: far above what a decode step
// allocates (a real-size step's largest buffer is its 1 MB of logits), so only a
// prompt's forward is cut, into batches of a few of its largest buffers (a 2,048-token
// chunk of Qwen3.5-0.8B makes 8 MB hidden states and 29 MB MLP activations).
const DefaultBatchBytes = 32 << 20

// New makes a graph on dev.
func New(dev Device, opt Options) *Graph {
	g := &Graph{dev: dev, params: []any{nil}, klist: []*kernels.Kernel{nil}, explicit: opt.ExplicitRelease} // index 0: none
	g.batchBytes = opt.BatchBytes
	g.fastPrompts = opt.FastPrompts
	if g.batchBytes == 0 {
		g.batchBytes = DefaultBatchBytes
	}
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

// FastPrompts reports Options.FastPrompts.
func (g *Graph) FastPrompts() bool { return g.fastPrompts }

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

// newNode takes a node from the store.
func (g *Graph) newNode(l kernels.Layout) *Node {
	id := g.ns.take()
	n := g.ns.get(id)
	n.id = nodeID(id)
	n.layout = l
	g.nodes++
	g.created++
	g.exec.helpNow()
	if g.cen != nil {
		g.cen.created(n)
	}
	return n
}

// handleChunk is how many scope-held handles are allocated at once.
const handleChunk = 256

// handle wraps n in a new handle: tracked outside a scope, held by the scope inside one.
// Scope-held handles come from chunks (one allocation per handleChunk arrays): nothing
// tracks them, and a chunk is never reused, so a handle kept past its scope still
// finds its stale generation and panics clearly.
func (g *Graph) handle(n *Node) *Handle {
	if k := len(g.scopes); k > 0 {
		if len(g.hchunk) == 0 {
			g.hchunk = make([]Handle, handleChunk)
		}
		h := &g.hchunk[0]
		g.hchunk = g.hchunk[1:]
		*h = Handle{n: n, g: g, gen: n.gen}
		s := g.scopes[k-1]
		s.nodes = append(s.nodes, n)
		n.refs++
		return h
	}
	h := &Handle{n: n, g: g, gen: n.gen}
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

// Keep returns a handle on h's node that outlives the current scope: h itself if it is
// tracked, else a new tracked handle (h stays the scope's, valid until the scope ends).
func (g *Graph) Keep(h *Handle) *Handle {
	n := h.node()
	if h.tracked {
		return h
	}
	k := &Handle{n: n, g: g, gen: n.gen}
	g.track(k)
	return k
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
		for _, id := range g.inputs(n) {
			in := g.ns.get(uint32(id))
			in.refs--
			if in.refs == 0 {
				stack = append(stack, in)
			}
		}
		if g.cen != nil {
			g.cen.freed(n)
		}
		g.dropData(n)
		g.setParams(n, nil)
		if n.hasErr {
			delete(g.errs, n.id)
		}
		if n.nin > inlineInputs {
			delete(g.wide, n.id)
		}
		id, gen := n.id, n.gen+1
		*n = Node{gen: gen, id: id}
		g.ns.put(uint32(id))
		g.nodes--
	}
	g.stack = stack[:0]
}

// dataOf returns n's buffer record, nil if it has none.
func (g *Graph) dataOf(n *Node) *data {
	if n.data == 0 {
		return nil
	}
	return g.ds.get(uint32(n.data))
}

// newData records buf with one owner.
func (g *Graph) newData(buf alloc.Buffer) dataID {
	id := g.ds.take()
	*g.ds.get(id) = data{buf: buf, owners: 1}
	return dataID(id)
}

// dropData releases n's ownership of its buffer.
func (g *Graph) dropData(n *Node) {
	id := n.data
	if id == 0 {
		return
	}
	n.data = 0
	g.ds.get(uint32(id)).owners--
	g.release(id)
}

// release frees data id's buffer once no owner is left: now if no launch in flight
// binds it, else when its batch has completed (see freeDeferred).
func (g *Graph) release(id dataID) {
	d := g.ds.get(uint32(id))
	if d.owners > 0 {
		return
	}
	if d.lastUse > g.doneSeq {
		g.deferred = append(g.deferred, id)
		return
	}
	g.freeData(id)
}

// waitFor waits for batch seq and records that it is done. Owner-less buffers return to
// the allocator only at these waits (release, freeDeferred), never because the worker
// happened to finish a batch sooner: which cached buffer the allocator hands out next,
// and so its counts and the sizes of live buffers, do not depend on timing.
func (g *Graph) waitFor(seq uint64) {
	g.exec.wait(seq)
	g.doneSeq = max(g.doneSeq, seq)
}

// freeData frees the buffer of an owner-less data and returns its slot.
func (g *Graph) freeData(id dataID) {
	d := g.ds.get(uint32(id))
	g.alloc.Free(d.buf)
	*d = data{}
	g.ds.put(uint32(id))
}

// freeDeferred frees the deferred buffers whose batches the graph has waited for.
func (g *Graph) freeDeferred() {
	if len(g.deferred) == 0 {
		return
	}
	keep := g.deferred[:0]
	for _, id := range g.deferred {
		if g.ds.get(uint32(id)).lastUse > g.doneSeq {
			keep = append(keep, id)
			continue
		}
		g.freeData(id)
	}
	g.deferred = keep
}

// setParams stores n's params (nil frees its slot).
func (g *Graph) setParams(n *Node, p any) {
	if n.params != 0 {
		g.params[n.params] = nil
		g.freeP = append(g.freeP, n.params)
		n.params = 0
	}
	if p == nil {
		return
	}
	if k := len(g.freeP); k > 0 {
		n.params = g.freeP[k-1]
		g.freeP = g.freeP[:k-1]
		g.params[n.params] = p
		return
	}
	n.params = uint32(len(g.params))
	g.params = append(g.params, p)
}

// setKernel records n's kernel.
func (g *Graph) setKernel(n *Node, k *kernels.Kernel) {
	id, ok := g.kids[k]
	if !ok {
		if g.kids == nil {
			g.kids = map[*kernels.Kernel]uint16{}
		}
		id = kernelID(k)
		g.kids[k] = id
		for len(g.klist) <= int(id) {
			g.klist = append(g.klist, nil)
		}
		g.klist[id] = k
	}
	n.kernel = id
}

// errOf returns n's error, if it failed.
func (g *Graph) errOf(n *Node) error {
	if !n.hasErr {
		return nil
	}
	return g.errs[n.id]
}

// setErr records err as n's error.
func (g *Graph) setErr(n *Node, err error) {
	if g.errs == nil {
		g.errs = map[nodeID]error{}
	}
	g.errs[n.id] = err
	n.hasErr = true
}

// fail marks n failed with err.
func (g *Graph) fail(n *Node, err error) {
	g.setErr(n, err)
	n.state = stateFailed
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
// no longer reaches releases its node; under ExplicitRelease it only sweeps.
func (g *Graph) collect() {
	if !g.explicit {
		runtime.GC()
		g.collections++
	}
	g.sweep()
}

// reclaim is the allocator's last resort before the resource-limit error: finish the
// work in flight (buffers it binds are freed when it completes), and if live buffers
// still reach the limit, collect dead handles (a full garbage collection).
func (g *Graph) reclaim() {
	g.drain()
	if g.alloc.LiveBufferCount() < g.alloc.ResourceLimit() {
		return // the allocator's purge of the cache is now enough: no collection needed
	}
	g.reclaims++
	g.collect()
	g.freeDeferred()
}

// cut runs the batch being filled (the evaluation goes on in the next one), waits for
// it and frees the buffers no later batch binds: the intermediates whose last consumers
// have run. An evaluation's peak is then its live arrays plus about one batch's new
// buffers, not every intermediate it makes. The frees happen at the graph's wait, at a
// point of its own program order (the batch's size in bytes), so counts do not depend
// on timing; an evaluation that allocates less than batchBytes, a decode step, is one
// batch as before. The batch runs on the caller when the worker is idle (flushWait), as
// a prompt's whole forward did before it was cut.
func (g *Graph) cut() {
	seq := g.exec.cur.seq
	g.exec.flushWait()
	g.waitFor(seq)
	g.syncFailures() // nodes that read a failed batch's outputs fail when scheduled
	g.freeDeferred()
}

// drain waits for all scheduled work and frees the buffers it no longer binds.
func (g *Graph) drain() {
	g.exec.flushWait()
	g.waitFor(g.exec.submitted)
	g.freeDeferred()
}

// Synchronize waits for all scheduled work, then collects dead handles: afterwards the
// allocator's counts are exact and deterministic. It returns any error of the device.
func (g *Graph) Synchronize() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.drain()
	g.collect()
	g.freeDeferred()
	return g.takeErr()
}

// ClearCache is MLX's clear_cache for this graph: it waits for the scheduled work and
// frees the buffers that work no longer needs (the graph frees a batch's buffers only
// once it has waited for the batch, where MLX frees them as a command buffer
// completes), then releases every buffer in the allocator's cache. Live buffers and
// handles are untouched, so live counts do not change; the cached count drops to 0.
// A released CPU buffer is Go memory that the next collection reclaims: when the cache
// held clearCollectBytes or more, ClearCache collects at once, so the heap reuses that
// memory instead of growing past it. It returns any error of the device.
func (g *Graph) ClearCache() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.drain()
	cached := g.alloc.CacheMemory()
	g.alloc.ClearCache()
	if cached >= clearCollectBytes {
		runtime.GC()
	}
	return g.takeErr()
}

// clearCollectBytes is the cache size from which ClearCache collects: a real-size
// prompt's scratch (about 100 MB at Qwen3.5-0.8B's size), not a toy's.
const clearCollectBytes = 16 << 20

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
			g.fail(n, f.err)
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
