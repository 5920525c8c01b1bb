package graph

import (
	"errors"
	"fmt"

	"github.com/ingotml/ingot/kernels"
)

// ErrNilArray is returned (wrapped) when a nil handle is passed where an array is
// expected (in tensor, the zero Array).
var ErrNilArray = errors.New("graph: nil array (an Array that was never built)")

// Eval evaluates outs and waits until their buffers are written. If the device failed
// a batch that computes one of them (or one of their ancestors), that error is
// returned, and the array carries it from then on.
func (g *Graph) Eval(outs ...*Handle) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.eval(outs)
}

func (g *Graph) eval(outs []*Handle) error {
	err := g.asyncEval(outs)
	if err != nil && errors.Is(err, ErrNilArray) {
		return err
	}
	var last uint64
	for _, h := range outs {
		if h.n.seq > last {
			last = h.n.seq
		}
	}
	g.exec.wait(last)
	g.syncFailures()
	for _, h := range outs {
		g.settle(h.n)
		if h.n.err != nil && err == nil {
			err = h.n.err
		}
	}
	if e := g.exec.takeErr(); err == nil { // reported once, here, even when an output's error came first
		err = e
	}
	return err
}

// checkHandles rejects nil handles and handles of another graph.
func (g *Graph) checkHandles(outs []*Handle) error {
	for i, h := range outs {
		if h == nil {
			return fmt.Errorf("graph: Eval argument %d: %w", i, ErrNilArray)
		}
		if h.g != g {
			graphPanic("Eval of an array from another graph")
		}
		h.node()
	}
	return nil
}

// AsyncEval schedules the unevaluated ancestors of outs and returns without waiting: the
// kernels run on the worker while the caller builds the next graph. Every scheduled
// node is detached at once (its inputs are released); a launch in flight keeps the
// buffers it uses until it completes. The first error (a pending build error, a failed
// input, an allocator failure) is returned; nodes scheduled before it still run.
func (g *Graph) AsyncEval(outs ...*Handle) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.asyncEval(outs)
}

func (g *Graph) asyncEval(outs []*Handle) error {
	if err := g.checkHandles(outs); err != nil {
		return err
	}
	g.syncFailures()
	g.freeDeferred()
	g.maybeSweep()
	firstErr := g.takeErr()
	tape := g.buildTape(outs)
	for _, n := range tape {
		if err := g.schedule(n); err != nil && firstErr == nil {
			firstErr = err
		}
	}
	clear(tape)
	g.tape = tape[:0]
	g.exec.flush()
	for _, h := range outs {
		if h.n.err != nil && firstErr == nil {
			firstErr = h.n.err
		}
	}
	return firstErr
}

// buildTape lists the pending ancestors of outs, inputs before consumers.
func (g *Graph) buildTape(outs []*Handle) []*Node {
	g.epoch++
	type frame struct {
		n *Node
		i int
	}
	tape := g.tape[:0]
	var stack []frame
	for _, h := range outs {
		if h.n.state != statePending || h.n.mark == g.epoch {
			continue
		}
		h.n.mark = g.epoch
		stack = append(stack[:0], frame{n: h.n})
		for len(stack) > 0 {
			f := &stack[len(stack)-1]
			if f.i < len(f.n.inputs) {
				in := f.n.inputs[f.i]
				f.i++
				if in.state == statePending && in.mark != g.epoch {
					in.mark = g.epoch
					stack = append(stack, frame{n: in})
				}
				continue
			}
			tape = append(tape, f.n)
			stack = stack[:len(stack)-1]
		}
	}
	return tape
}

// donationSlack is how much larger than needed a donated buffer may be (as MLX).
const donationSlack = 16384

// schedule gives n a buffer, queues its launch and detaches it.
func (g *Graph) schedule(n *Node) error {
	defer g.detach(n)
	if n.err == nil {
		for _, in := range n.inputs {
			g.settle(in)
			if in.err != nil {
				n.err = in.err
				break
			}
		}
	}
	if n.err != nil {
		n.state = stateFailed
		return n.err
	}
	if n.view {
		d := n.inputs[0].data
		n.data = d
		if d != nil {
			d.owners++
		}
		n.state = stateScheduled
		n.seq = n.inputs[0].seq
		return nil
	}
	size := n.layout.Size() * n.layout.DType.Size()
	var d *data
	if n.kernel.Donates && len(n.inputs) > 0 {
		d = g.donor(n.inputs[0], n, size)
	}
	if d == nil {
		buf, err := g.alloc.Malloc(size) // may reclaim: flushes the batch in progress
		if err != nil {
			n.err = err
			n.state = stateFailed
			return err
		}
		d = &data{buf: buf, owners: 1}
	}
	n.data = d
	b := g.exec.current()
	// Grow in place: a Launch is large, so avoid building one and copying it.
	if k := len(b.launches); k < cap(b.launches) {
		b.launches = b.launches[:k+1]
	} else {
		b.launches = append(b.launches, kernels.Launch{})
	}
	l := &b.launches[len(b.launches)-1]
	l.Kernel, l.Params = n.kernel, n.params
	for i, in := range n.inputs {
		src := in.data
		if src == nil { // donated its buffer to n
			src = d
		}
		l.Args[i] = kernels.Arg{Data: src.bytes(), Layout: in.layout}
		if n.kernel.Broadcasts && !kernels.SameShape(&in.layout, &n.layout) {
			l.Args[i].Layout = kernels.BroadcastLayout(&in.layout, &n.layout)
		}
		src.lastUse = b.seq
	}
	l.Args[len(n.inputs)] = kernels.Arg{Data: d.bytes(), Layout: n.layout}
	l.NArgs = len(n.inputs) + 1
	d.lastUse = b.seq
	n.state = stateScheduled
	n.seq = b.seq
	return nil
}

// donor returns in's buffer for out when nothing else can read in afterwards: in is
// referenced only by out's edge, owns its buffer alone, and has out's size and layout.
func (g *Graph) donor(in, out *Node, size int) *data {
	d := in.data
	if in.refs != 1 || d == nil || d.owners != 1 || d.buf.IsNil() {
		return nil
	}
	if in.layout.Offset != 0 || !in.layout.IsContiguous() || in.layout.DType.Size() != out.layout.DType.Size() ||
		!kernels.SameShape(&in.layout, &out.layout) {
		return nil
	}
	if d.buf.Len() < size || d.buf.Len()-size > donationSlack {
		return nil
	}
	in.data = nil // ownership moves to out
	return d
}

// detach drops n's recipe and input edges: evaluated nodes keep only their buffer.
func (g *Graph) detach(n *Node) {
	ins := n.inputs
	n.inputs = n.inl[:0]
	n.kernel = nil
	n.params = nil
	n.view = false
	for i, in := range ins {
		ins[i] = nil
		g.decRef(in)
	}
}

func (d *data) bytes() []byte {
	if d == nil || d.buf.IsNil() {
		return nil
	}
	return d.buf.Bytes()
}
