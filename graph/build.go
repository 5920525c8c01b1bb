package graph

import (
	"fmt"

	"github.com/ingotml/ingot/kernels"
)

// Apply builds an unevaluated node that will run kernel k with params on inputs, writing
// a contiguous output of dtype dt and shape. Nothing is allocated until eval.
func (g *Graph) Apply(k *kernels.Kernel, params any, dt kernels.DType, shape []int, inputs ...*Handle) *Handle {
	return g.ApplyLayout(k, params, kernels.Contiguous(dt, shape...), inputs...)
}

// ApplyLayout is Apply with the output given as a contiguous layout (saves building a
// shape slice on hot paths).
func (g *Graph) ApplyLayout(k *kernels.Kernel, params any, out kernels.Layout, inputs ...*Handle) *Handle {
	n := g.newNode(out)
	n.kernel = k
	n.params = params
	g.attach(n, inputs)
	return g.handle(n)
}

// View builds a node that shares in's buffer with layout l (l.Offset counts from the
// start of in's buffer, so a view of a view composes by layout arithmetic).
func (g *Graph) View(in *Handle, l kernels.Layout) *Handle {
	n := g.newNode(l)
	n.view = true
	g.attach(n, []*Handle{in})
	return g.handle(n)
}

func (g *Graph) attach(n *Node, inputs []*Handle) {
	for _, h := range inputs {
		if h.g != g {
			graphPanic("input from another graph")
		}
		in := h.node()
		in.refs++
		n.inputs = append(n.inputs, in)
		if in.err != nil && n.err == nil {
			n.err = in.err
		}
	}
}

// FromBytes makes an evaluated array from host bytes, allocating its buffer now, on the
// caller's goroutine, as MLX does for host data and scalars. An allocator failure is
// recorded (the next Eval or Synchronize returns it) and the array is marked failed.
func (g *Graph) FromBytes(l kernels.Layout, b []byte) *Handle {
	n := g.newNode(l)
	h := g.handle(n)
	size := l.Span() * l.DType.Size()
	if len(b) < size {
		graphPanic("FromBytes: %d bytes for a layout spanning %d", len(b), size)
	}
	buf, err := g.alloc.Malloc(size)
	if err != nil {
		n.err = err
		n.state = stateFailed
		if g.buildErr == nil {
			g.buildErr = err
		}
		return h
	}
	d := &data{buf: buf, owners: 1}
	if size > 0 {
		copy(buf.Bytes(), b[:size])
	}
	n.data = d
	n.state = stateScheduled
	return h
}

// Bytes waits for h's buffer and returns it with h's layout. A pending node is evaluated
// first. The bytes belong to the buffer: copy what you keep.
func (g *Graph) Bytes(h *Handle) ([]byte, kernels.Layout, error) {
	if h == nil {
		return nil, kernels.Layout{}, fmt.Errorf("graph: Bytes: %w", ErrNilArray)
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if err := g.checkHandles([]*Handle{h}); err != nil {
		return nil, h.n.layout, err
	}
	if h.n.state == statePending {
		if err := g.eval([]*Handle{h}); err != nil {
			return nil, h.n.layout, err
		}
	}
	if h.n.err != nil {
		return nil, h.n.layout, h.n.err
	}
	g.exec.flush()
	g.exec.wait(h.n.seq)
	g.freeDeferred()
	g.syncFailures()
	g.settle(h.n) // never hand out a buffer its failed batch did not write
	if err := g.exec.takeErr(); h.n.err != nil || err != nil {
		if h.n.err != nil {
			err = h.n.err
		}
		return nil, h.n.layout, err
	}
	if h.n.data == nil || h.n.data.buf.IsNil() {
		return nil, h.n.layout, nil
	}
	return h.n.data.buf.Bytes(), h.n.layout, nil
}
