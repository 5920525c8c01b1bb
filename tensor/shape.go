package tensor

import (
	"math"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/kernels"
)

// Views share their input's buffer (no new buffer, no count), as MLX's reshape, slice,
// transpose and broadcast do; a reshape of a non-contiguous array copies first.

func view(a Array, l kernels.Layout) Array { return Array{a.Graph().View(a.h, l)} }

// Reshape returns a with a new shape of the same size; one dimension may be -1.
func Reshape(a Array, shape ...int) Array {
	shape = append([]int(nil), shape...)
	n, infer := 1, -1
	for i, d := range shape {
		switch {
		case d == -1 && infer < 0:
			infer = i
		case d < 0:
			shapePanic("reshape", "bad shape %v", shape)
		default:
			n *= d
		}
	}
	if infer >= 0 {
		if n == 0 || a.Size()%n != 0 {
			shapePanic("reshape", "cannot reshape %v to %v", a.Shape(), shape)
		}
		shape[infer] = a.Size() / n
		n = a.Size()
	}
	if n != a.Size() {
		shapePanic("reshape", "cannot reshape %v (%d elements) to %v", a.Shape(), a.Size(), shape)
	}
	if len(shape) > kernels.MaxDims {
		shapePanic("reshape", "rank %d exceeds %d", len(shape), kernels.MaxDims)
	}
	a = Contiguous(a)
	l := kernels.Contiguous(a.DType(), shape...)
	l.Offset = a.Layout().Offset
	return view(a, l)
}

// Flatten reshapes a to one dimension.
func Flatten(a Array) Array { return Reshape(a, a.Size()) }

// Transpose permutes a's axes (no perm: reverse them).
func Transpose(a Array, perm ...int) Array {
	in := a.Layout()
	if len(perm) == 0 {
		for i := in.NDim - 1; i >= 0; i-- {
			perm = append(perm, i)
		}
	}
	if len(perm) != in.NDim {
		shapePanic("transpose", "perm %v for rank %d", perm, in.NDim)
	}
	l := in
	seen := 0
	for i, p := range perm {
		p = axis(p, in.NDim)
		if seen&(1<<p) != 0 {
			shapePanic("transpose", "repeated axis in %v", perm)
		}
		seen |= 1 << p
		l.Shape[i] = in.Shape[p]
		l.Strides[i] = in.Strides[p]
	}
	return view(a, l)
}

// SwapAxes exchanges two axes.
func SwapAxes(a Array, i, j int) Array {
	perm := make([]int, a.NDim())
	for k := range perm {
		perm[k] = k
	}
	i, j = axis(i, a.NDim()), axis(j, a.NDim())
	perm[i], perm[j] = j, i
	return Transpose(a, perm...)
}

// BroadcastTo views a with shape (numpy rules).
func BroadcastTo(a Array, shape ...int) Array {
	BroadcastShapes("broadcast_to", a.Shape(), shape)
	if len(shape) < a.NDim() {
		shapePanic("broadcast_to", "cannot broadcast %v to %v", a.Shape(), shape)
	}
	in := a.Layout()
	out := kernels.Contiguous(in.DType, shape...)
	for i := range shape {
		if j := i - (len(shape) - in.NDim); j >= 0 && in.Shape[j] != shape[i] && in.Shape[j] != 1 {
			shapePanic("broadcast_to", "cannot broadcast %v to %v", a.Shape(), shape)
		}
	}
	return view(a, kernels.BroadcastLayout(&in, &out))
}

// ExpandDims inserts a size-1 axis at ax.
func ExpandDims(a Array, ax int) Array {
	in := a.Layout()
	ax = axis(ax, in.NDim+1)
	l := in
	l.NDim++
	if l.NDim > kernels.MaxDims {
		shapePanic("expand_dims", "rank %d exceeds %d", l.NDim, kernels.MaxDims)
	}
	for i := l.NDim - 1; i > ax; i-- {
		l.Shape[i], l.Strides[i] = in.Shape[i-1], in.Strides[i-1]
	}
	l.Shape[ax], l.Strides[ax] = 1, 0
	return view(a, l)
}

// Squeeze removes axis ax, which must have size 1.
func Squeeze(a Array, ax int) Array {
	in := a.Layout()
	ax = axis(ax, in.NDim)
	if in.Shape[ax] != 1 {
		shapePanic("squeeze", "axis %d of %v is not 1", ax, a.Shape())
	}
	l := in
	l.NDim--
	for i := ax; i < l.NDim; i++ {
		l.Shape[i], l.Strides[i] = in.Shape[i+1], in.Strides[i+1]
	}
	l.Shape[l.NDim], l.Strides[l.NDim] = 0, 0
	return view(a, l)
}

// Slice views a[start:stop:step] along each axis given (len(start) axes from 0; a
// negative start or stop counts from the end; steps default to 1).
func Slice(a Array, start, stop []int, steps ...int) Array {
	in := a.Layout()
	if len(start) != len(stop) || len(start) > in.NDim || (len(steps) != 0 && len(steps) != len(start)) {
		shapePanic("slice", "start %v stop %v steps %v for shape %v", start, stop, steps, a.Shape())
	}
	l := in
	for i := range start {
		st := 1
		if len(steps) > 0 {
			st = steps[i]
		}
		n := in.Shape[i]
		b, e := start[i], stop[i]
		if b < 0 {
			b += n
		}
		if e < 0 {
			e += n
		}
		b, e = min(max(b, 0), n), min(max(e, 0), n)
		if st <= 0 {
			shapePanic("slice", "step %d must be positive", st)
		}
		cnt := 0
		if e > b {
			cnt = (e - b + st - 1) / st
		}
		l.Offset += b * in.Strides[i]
		l.Shape[i] = cnt
		l.Strides[i] = in.Strides[i] * st
	}
	return view(a, l)
}

// SliceAxis views a[..., start:stop, ...] along one axis.
func SliceAxis(a Array, ax, start, stop int) Array {
	ax = axis(ax, a.NDim())
	b := make([]int, ax+1)
	e := make([]int, ax+1)
	for i := 0; i < ax; i++ {
		e[i] = a.Dim(i)
	}
	b[ax], e[ax] = start, stop
	return Slice(a, b, e)
}

// Concatenate joins arrays along ax (up to kernels.MaxArgs-1 at once; more are joined
// in rounds).
func Concatenate(ax int, as ...Array) Array {
	if len(as) == 0 {
		shapePanic("concatenate", "no arrays")
	}
	if len(as) == 1 {
		return as[0]
	}
	for len(as) > kernels.MaxArgs-1 {
		head := Concatenate(ax, as[:kernels.MaxArgs-1]...)
		as = append([]Array{head}, as[kernels.MaxArgs-1:]...)
	}
	nd := as[0].NDim()
	ax = axis(ax, nd)
	shape := as[0].Shape()
	dt := as[0].DType()
	for _, b := range as[1:] {
		same("concatenate", as[0], b)
		dt = promote(dt, b.DType())
	}
	hs := make([]*graph.Handle, len(as))
	total := 0
	for i, b := range as {
		bs := b.Shape()
		if len(bs) != nd {
			shapePanic("concatenate", "ranks differ: %v and %v", shape, bs)
		}
		for d := range bs {
			if d != ax && bs[d] != shape[d] {
				shapePanic("concatenate", "shapes %v and %v differ off axis %d", shape, bs, ax)
			}
		}
		total += bs[ax]
		hs[i] = b.AsType(dt).h
	}
	shape[ax] = total
	return Array{as[0].Graph().Apply(kernels.KConcatenate, &kernels.ConcatParams{Axis: ax}, dt, shape, hs...)}
}

// SliceUpdate returns base with base[start:start+update.shape] replaced by update (a
// new array; base's buffer is reused when nothing else reads base).
func SliceUpdate(base, update Array, start []int) Array {
	same("slice_update", base, update)
	bl := kernels.Contiguous(base.DType(), base.Shape()...)
	if update.NDim() != bl.NDim || len(start) != bl.NDim {
		shapePanic("slice_update", "update %v at %v into %v", update.Shape(), start, base.Shape())
	}
	p := &kernels.SliceUpdateParams{}
	for i := 0; i < bl.NDim; i++ {
		if start[i] < 0 || start[i]+update.Dim(i) > bl.Shape[i] {
			shapePanic("slice_update", "update %v at %v out of %v", update.Shape(), start, base.Shape())
		}
		p.Offset += start[i] * bl.Strides[i]
		p.Strides[i] = bl.Strides[i]
	}
	return Array{base.Graph().Apply(kernels.KSliceUpdate, p, base.DType(), base.Shape(), base.h, update.AsType(base.DType()).h)}
}

// Full returns an array of shape filled with v: one scalar buffer now, one output
// buffer at eval (as mx.full / mx.zeros).
func Full(g *graph.Graph, dt DType, v float64, shape ...int) Array {
	s := Scalar(g, v, dt)
	b := BroadcastTo(s, shape...)
	out := Copy(b)
	// The intermediates are dropped here, not left to a collection (outside a scope
	// they are tracked handles); out's node keeps theirs.
	Release(b)
	Release(s)
	return out
}

// Zeros returns zeros of shape.
func Zeros(g *graph.Graph, dt DType, shape ...int) Array { return Full(g, dt, 0, shape...) }

// Ones returns ones of shape.
func Ones(g *graph.Graph, dt DType, shape ...int) Array { return Full(g, dt, 1, shape...) }

// Arange returns [start, start+step, ...) below stop.
func Arange(g *graph.Graph, start, stop, step float64, dt DType) Array {
	if step == 0 {
		shapePanic("arange", "step 0")
	}
	n := max(0, int(math.Ceil((stop-start)/step)))
	return Array{g.Apply(kernels.KArange, &kernels.ArangeParams{Start: start, Step: step}, dt, []int{n})}
}
