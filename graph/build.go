package graph

import (
	"fmt"
	"unsafe"

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
	g.setKernel(n, k)
	g.setParams(n, params)
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
	if len(inputs) >= kernels.MaxArgs {
		graphPanic("%d inputs: a node takes at most %d", len(inputs), kernels.MaxArgs-1)
	}
	ids := n.in[:0]
	if len(inputs) > inlineInputs {
		ids = make([]nodeID, 0, len(inputs))
	}
	for _, h := range inputs {
		if h.g != g {
			graphPanic("input from another graph")
		}
		in := h.node()
		in.refs++
		ids = append(ids, in.id)
		n.nin++
		if in.hasErr && !n.hasErr {
			g.setErr(n, g.errOf(in))
		}
	}
	if len(inputs) > inlineInputs {
		if g.wide == nil {
			g.wide = map[nodeID][]nodeID{}
		}
		g.wide[n.id] = ids
	}
}

// inputs returns n's input edges.
func (g *Graph) inputs(n *Node) []nodeID {
	if n.nin <= inlineInputs {
		return n.in[:n.nin]
	}
	return g.wide[n.id]
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
		g.fail(n, err)
		if g.buildErr == nil {
			g.buildErr = err
		}
		return h
	}
	if size > 0 {
		copy(buf.Bytes(), b[:size])
	}
	n.data = g.newData(buf)
	n.state = stateScheduled
	return h
}

// FromHost is FromBytes for bytes the caller keeps alive elsewhere (a weight mapped
// from its file): on a device that reads host memory in place (the CPU device) the
// buffer is b itself, counted by the allocator as one buffer object exactly as a copy
// would be (alloc.Allocator.Adopt), and release is called when the buffer is freed.
// Elsewhere, or when b is not aligned for l's dtype, b is copied as FromBytes does and
// release is called at once. b must not change while the array lives.
func (g *Graph) FromHost(l kernels.Layout, b []byte, release func()) *Handle {
	return g.FromMapped(l, b, nil, release)
}

// FromMapped is FromHost for bytes that lie within mapping, the whole page-aligned
// mapping of their file: a device that is a HostMapper (Metal) binds b in place there
// when it can, as the CPU device binds b itself, and b is copied only when neither can.
func (g *Graph) FromMapped(l kernels.Layout, b, mapping []byte, release func()) *Handle {
	size := l.Span() * l.DType.Size()
	fits := size > 0 && len(b) >= size
	inPlace := fits && g.dev.Name() == "cpu" &&
		uintptr(unsafe.Pointer(&b[0]))%uintptr(max(l.DType.Size(), 1)) == 0
	if hm, ok := g.dev.(HostMapper); ok && fits && !inPlace && mapping != nil {
		if done, ok := hm.MapHost(l.DType, b[:size:size], mapping); ok {
			inPlace, release = true, then(done, release)
		}
	}
	if !inPlace {
		h := g.FromBytes(l, b)
		if release != nil {
			release()
		}
		return h
	}
	n := g.newNode(l)
	h := g.handle(n)
	buf, err := g.alloc.Adopt(b[:size:size], release)
	if err != nil {
		if release != nil {
			release()
		}
		g.fail(n, err)
		if g.buildErr == nil {
			g.buildErr = err
		}
		return h
	}
	n.data = g.newData(buf)
	n.state = stateScheduled
	return h
}

// then is a release that calls first, then second (either may be nil).
func then(first, second func()) func() {
	return func() {
		if first != nil {
			first()
		}
		if second != nil {
			second()
		}
	}
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
	if err := g.errOf(h.n); err != nil {
		return nil, h.n.layout, err
	}
	g.exec.flushWait()
	g.waitFor(h.n.seq)
	g.freeDeferred()
	g.syncFailures()
	g.settle(h.n) // never hand out a buffer its failed batch did not write
	if err := g.exec.takeErr(); h.n.hasErr || err != nil {
		if h.n.hasErr {
			err = g.errOf(h.n)
		}
		return nil, h.n.layout, err
	}
	d := g.dataOf(h.n)
	if d == nil {
		return nil, h.n.layout, nil
	}
	return d.buf.Bytes(), h.n.layout, nil
}
