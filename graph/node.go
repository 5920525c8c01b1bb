package graph

import (
	"math"
	"sync"

	"github.com/ingotml/ingot/alloc"
	"github.com/ingotml/ingot/kernels"
)

// nodeState is where a node is in its life: built and waiting, scheduled on the device
// (its buffer exists; its kernel may still be running), or failed.
type nodeState uint8

const (
	statePending nodeState = iota
	stateScheduled
	stateFailed
)

// Node is one array of the graph: a layout, and either a buffer (evaluated or host data)
// or a recipe (kernel, params, inputs) that eval turns into one. Nodes are owned by the
// graph and counted exactly: refs is the number of input edges from live unevaluated
// nodes plus the number of live handles. At zero the node dies at once, releasing its
// inputs and its buffer; no garbage collection is involved.
//
// A Node holds no Go pointer: nodes live in the graph's chunks (see nodeStore), refer
// to their inputs, buffer, kernel, params and error by index, and the collector never
// scans them. A dead chain of a million pending links costs a collection nothing.
type Node struct {
	layout kernels.Layout
	seq    uint64               // batch that produces the buffer
	in     [inlineInputs]nodeID // input edges when nin <= inlineInputs, else in the wide map
	id     nodeID               // this node's index in the store
	data   dataID               // its buffer (0: none)
	params uint32               // index in the graph's params table (0: nil)
	refs   int32
	mark   uint32 // tape-building epoch
	gen    uint32 // bumped when the node is freed, so stale handles are caught
	site   int32  // census site index (0: created while the census was off)
	kernel uint16 // index in the kernel table (0: a leaf or a view)
	nin    uint8
	state  nodeState
	view   bool // shares its input's buffer (reshape, slice, transpose, broadcast)
	hasErr bool // the graph's errs map holds its error
}

// inlineInputs is how many input edges a node holds itself; the rare wider nodes keep
// theirs in the graph's wide map (a smaller node is less host memory per dead link).
const inlineInputs = 6

// nodeID indexes the node store; 0 is no node.
type nodeID uint32

// dataID indexes the data store; 0 is no buffer.
type dataID uint32

// data is a buffer shared by the nodes that view it (owners). When the last owner goes,
// the buffer is freed at once unless a launch still in flight uses it (lastUse is the
// newest batch that binds it); then it is freed when that batch completes. Both fields
// belong to the graph's goroutine: the worker never touches a data.
type data struct {
	buf     alloc.Buffer
	owners  int32
	lastUse uint64
}

// storeChunk is the number of nodes (or datas) per chunk: chunks are never moved or
// freed while the graph lives, so a *Node stays valid and ids stay small.
const storeChunk = 1024

// store is a pool of T in fixed chunks, addressed by a 1-based index, with a free list.
type store[T any] struct {
	chunks [][]T
	free   []uint32
	n      uint32 // slots handed out so far (the next new index is n+1)
}

// get returns the slot of index i (> 0).
func (s *store[T]) get(i uint32) *T {
	i--
	return &s.chunks[i/storeChunk][i%storeChunk]
}

// take returns a free slot's index, zeroed.
func (s *store[T]) take() uint32 {
	if k := len(s.free); k > 0 {
		i := s.free[k-1]
		s.free = s.free[:k-1]
		return i
	}
	if s.n%storeChunk == 0 {
		s.chunks = append(s.chunks, make([]T, storeChunk))
	}
	s.n++
	return s.n
}

// put returns slot i to the pool; the caller has reset it.
func (s *store[T]) put(i uint32) { s.free = append(s.free, i) }

// kernelTable numbers kernels for nodes (which cannot point at them). It is global, as
// the catalog is; a graph caches lookups in its own map.
var kernelTable struct {
	mu   sync.RWMutex
	ids  map[*kernels.Kernel]uint16
	list []*kernels.Kernel // list[0] is nil
}

// kernelID returns k's number, assigning one on first use.
func kernelID(k *kernels.Kernel) uint16 {
	kernelTable.mu.Lock()
	defer kernelTable.mu.Unlock()
	if id, ok := kernelTable.ids[k]; ok {
		return id
	}
	if kernelTable.ids == nil {
		kernelTable.ids = map[*kernels.Kernel]uint16{}
		kernelTable.list = []*kernels.Kernel{nil}
	}
	if len(kernelTable.list) > math.MaxUint16 {
		panic("graph: more than 65535 distinct kernels")
	}
	id := uint16(len(kernelTable.list))
	kernelTable.ids[k] = id
	kernelTable.list = append(kernelTable.list, k)
	return id
}

// kernelByID returns kernel id's *Kernel (nil for 0).
func kernelByID(id uint16) *kernels.Kernel {
	if id == 0 {
		return nil
	}
	kernelTable.mu.RLock()
	defer kernelTable.mu.RUnlock()
	return kernelTable.list[id]
}

// Handle is a program's reference to a node. Outside a scope every handle is tracked:
// the graph keeps a weak pointer to it and drops its reference once the garbage
// collector finds it unreachable (see Graph.Synchronize). Inside a scope a handle is a
// plain carrier and the scope holds the node until it ends; Keep makes a handle tracked
// so its array outlives the scope. Copying a *Handle is free.
type Handle struct {
	n        *Node
	g        *Graph
	gen      uint32
	slot     int // index in the graph's handle registry, while tracked
	tracked  bool
	released bool
}

// node returns the handle's node, panicking if the node was freed (a handle from an
// ended scope that was not kept).
func (h *Handle) node() *Node {
	if h.released {
		graphPanic("array used after Release (it was reassigned)")
	}
	if h.gen != h.n.gen {
		graphPanic("array used after its scope ended (Keep arrays that outlive a scope)")
	}
	return h.n
}

// Layout returns the node's layout (shape, strides, offset, dtype).
func (h *Handle) Layout() kernels.Layout { return h.node().layout }

// LayoutRef returns the node's layout without copying it; it must not be modified.
func (h *Handle) LayoutRef() *kernels.Layout { return &h.node().layout }

// Graph returns the graph the handle belongs to.
func (h *Handle) Graph() *Graph { return h.g }

// Node returns the node behind the handle (for primitives and the census).
func (h *Handle) Node() *Node { return h.node() }

// Evaluated reports whether the node has a buffer (its kernel may still be in flight).
func (h *Handle) Evaluated() bool { return h.node().state == stateScheduled }

// Err returns the error that made the node fail, if any.
func (h *Handle) Err() error { return h.g.errOf(h.node()) }

// Op returns the name of the node's primitive: a kernel name, "view", or "data".
func (n *Node) Op() string {
	switch {
	case n.kernel != 0:
		return kernelByID(n.kernel).Name
	case n.view:
		return "view"
	default:
		return "data"
	}
}

// NumInputs is the number of input edges still attached (0 once evaluated).
func (n *Node) NumInputs() int { return int(n.nin) }
