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
	err := g.scheduleOuts(outs, true)
	if err != nil && errors.Is(err, ErrNilArray) {
		return err
	}
	var last uint64
	for _, h := range outs {
		if h.n.seq > last {
			last = h.n.seq
		}
	}
	g.waitFor(last)
	g.syncFailures()
	for _, h := range outs {
		g.settle(h.n)
		if h.n.hasErr && err == nil {
			err = g.errOf(h.n)
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
	return g.scheduleOuts(outs, false)
}

// scheduleOuts schedules the pending ancestors of outs and submits the batch; wait says
// the caller waits for it next (see executor.flushWait).
func (g *Graph) scheduleOuts(outs []*Handle, wait bool) error {
	if err := g.checkHandles(outs); err != nil {
		return err
	}
	g.syncFailures()
	g.freeDeferred()
	g.maybeSweep()
	firstErr := g.takeErr()
	tape := g.buildTape(outs)
	for i, n := range tape {
		g.exec.helpNow()
		if err := g.schedule(n); err != nil && firstErr == nil {
			firstErr = err
		}
		if b := g.exec.cur; b != nil && g.batchBytes > 0 && b.bytes >= g.batchBytes && i < len(tape)-1 {
			g.cut()
		}
	}
	clear(tape)
	g.tape = tape[:0]
	if wait {
		g.exec.flushWait()
	} else {
		g.exec.flush()
	}
	if g.exec.sync {
		g.doneSeq = g.exec.submitted // a synchronous executor ran the batch at its flush
	}
	for _, h := range outs {
		if h.n.hasErr && firstErr == nil {
			firstErr = g.errOf(h.n)
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
			if f.i < int(f.n.nin) {
				in := g.ns.get(uint32(g.inputs(f.n)[f.i]))
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
	if !n.hasErr {
		for _, id := range g.inputs(n) {
			in := g.ns.get(uint32(id))
			g.settle(in)
			if in.hasErr {
				g.setErr(n, g.errOf(in))
				break
			}
		}
	}
	if n.hasErr {
		n.state = stateFailed
		return g.errOf(n)
	}
	if n.view {
		in := g.ns.get(uint32(n.in[0]))
		n.data = in.data
		if d := g.dataOf(n); d != nil {
			d.owners++
		}
		n.state = stateScheduled
		n.seq = in.seq
		return nil
	}
	k := g.klist[n.kernel]
	size := n.layout.Size() * n.layout.DType.Size()
	var did dataID
	if k.Donates && n.nin > 0 {
		did = g.donor(g.ns.get(uint32(n.in[0])), n, size)
	}
	if did == 0 {
		buf, err := g.alloc.Malloc(size) // may reclaim: flushes the batch in progress
		if err != nil {
			g.fail(n, err)
			return err
		}
		did = g.newData(buf)
		g.exec.current().bytes += int64(buf.Len())
	}
	n.data = did
	d := g.ds.get(uint32(did))
	b := g.exec.current()
	// Grow in place: a Launch is large, so avoid building one and copying it.
	if k := len(b.launches); k < cap(b.launches) {
		b.launches = b.launches[:k+1]
	} else {
		b.launches = append(b.launches, kernels.Launch{})
	}
	l := &b.launches[len(b.launches)-1]
	l.Kernel, l.Params = k, g.params[n.params]
	l.Helper = nil
	if g.exec.inline {
		l.Helper = &g.exec.helper // this graph's caller helps while it waits
	}
	for i, id := range g.inputs(n) {
		in := g.ns.get(uint32(id))
		src := g.dataOf(in)
		if src == nil { // donated its buffer to n
			src = d
		}
		a := &l.Args[i]
		a.Data = src.bytes()
		if k.Broadcasts && !kernels.SameShape(&in.layout, &n.layout) {
			a.Layout = kernels.BroadcastLayout(&in.layout, &n.layout)
		} else {
			a.Layout = in.layout
		}
		src.lastUse = b.seq
	}
	o := &l.Args[n.nin]
	o.Data, o.Layout = d.bytes(), n.layout
	l.NArgs = int(n.nin) + 1
	d.lastUse = b.seq
	n.state = stateScheduled
	n.seq = b.seq
	return nil
}

// donor returns in's buffer for out when nothing else can read in afterwards: in is
// referenced only by out's edge, owns its buffer alone, and has out's size and layout.
func (g *Graph) donor(in, out *Node, size int) dataID {
	d := g.dataOf(in)
	if in.refs != 1 || d == nil || d.owners != 1 || d.buf.IsNil() {
		return 0
	}
	if in.layout.Offset != 0 || !in.layout.IsContiguous() || in.layout.DType.Size() != out.layout.DType.Size() ||
		!kernels.SameShape(&in.layout, &out.layout) {
		return 0
	}
	if d.buf.Len() < size || d.buf.Len()-size > donationSlack {
		return 0
	}
	id := in.data
	in.data = 0 // ownership moves to out
	return id
}

// detach drops n's recipe and input edges: evaluated nodes keep only their buffer.
func (g *Graph) detach(n *Node) {
	ins := n.in // a copy
	var in []nodeID
	if n.nin > inlineInputs {
		in = g.wide[n.id]
		delete(g.wide, n.id)
	} else {
		in = ins[:n.nin]
	}
	n.nin = 0
	n.kernel = 0
	g.setParams(n, nil)
	n.view = false
	for _, id := range in {
		g.decRef(g.ns.get(uint32(id)))
	}
}

func (d *data) bytes() []byte {
	if d == nil || d.buf.IsNil() {
		return nil
	}
	return d.buf.Bytes()
}
