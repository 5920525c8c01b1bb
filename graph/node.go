package graph

import (
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
type Node struct {
	// Pointer fields first: the garbage collector scans an object only up to its last
	// pointer, so the pointer-free layout below costs a dead chain nothing to mark.
	kernel *kernels.Kernel // nil for leaves and views
	params any
	err    error
	data   *data
	inputs []*Node
	inl    [4]*Node // inline storage for inputs

	layout kernels.Layout
	seq    uint64 // batch that produces the buffer
	refs   int32
	mark   uint32 // tape-building epoch
	gen    uint32 // bumped when the node is freed, so stale handles are caught
	site   int32  // census site index (0: created while the census was off)
	state  nodeState
	view   bool // shares its input's buffer (reshape, slice, transpose, broadcast)
}

// data is a buffer shared by the nodes that view it (owners). When the last owner goes,
// the buffer is freed at once unless a launch still in flight uses it (lastUse is the
// newest batch that binds it); then it is freed when that batch completes. Both fields
// belong to the graph's goroutine: the worker never touches a data.
type data struct {
	buf     alloc.Buffer
	owners  int32
	lastUse uint64
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
func (h *Handle) Err() error { return h.node().err }

// Op returns the name of the node's primitive: a kernel name, "view", or "data".
func (n *Node) Op() string {
	switch {
	case n.kernel != nil:
		return n.kernel.Name
	case n.view:
		return "view"
	default:
		return "data"
	}
}

// NumInputs is the number of input edges still attached (0 once evaluated).
func (n *Node) NumInputs() int { return len(n.inputs) }
