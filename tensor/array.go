package tensor

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/kernels"
)

// DType is an element type.
type DType = kernels.DType

// The element types.
const (
	Float32  = kernels.Float32
	Float16  = kernels.Float16
	BFloat16 = kernels.BFloat16
	Int32    = kernels.Int32
	UInt32   = kernels.UInt32
	Bool     = kernels.Bool
)

// Array is a lazy n-d array: a cheap value that refers to a graph node. Ops build new
// unevaluated nodes; Eval computes them. The zero Array is invalid.
type Array struct{ h *graph.Handle }

// Wrap makes an Array from a graph handle.
func Wrap(h *graph.Handle) Array { return Array{h} }

// Handle returns the graph handle behind a.
func (a Array) Handle() *graph.Handle { return a.h }

// Valid reports whether a refers to a node.
func (a Array) Valid() bool { return a.h != nil }

// Graph returns the graph a belongs to.
func (a Array) Graph() *graph.Graph { return a.h.Graph() }

// Layout returns a's layout.
func (a Array) Layout() kernels.Layout { return a.h.Layout() }

// Shape returns a copy of a's shape.
func (a Array) Shape() []int { return a.h.LayoutRef().Dims() }

// NDim is a's rank.
func (a Array) NDim() int { return a.h.LayoutRef().NDim }

// Dim returns the size of axis i (negative counts from the end).
func (a Array) Dim(i int) int {
	l := a.h.LayoutRef()
	return l.Shape[axis(i, l.NDim)]
}

// Size is the number of elements.
func (a Array) Size() int { return a.h.LayoutRef().Size() }

// DType is a's element type.
func (a Array) DType() DType { return a.h.LayoutRef().DType }

// Err returns the error that made a fail (an allocator error during building or eval).
func (a Array) Err() error { return a.h.Err() }

// String describes a's shape and dtype.
func (a Array) String() string {
	if a.h == nil {
		return "Array(invalid)"
	}
	return fmt.Sprintf("Array(%v, %s)", a.Shape(), a.DType())
}

// ShapeError is the panic value of an op given shapes or arguments it cannot take: a
// programming error, reported with the op's name and the shapes.
type ShapeError struct{ Op, Msg string }

// Error names the op.
func (e *ShapeError) Error() string { return "tensor: " + e.Op + ": " + e.Msg }

func shapePanic(op, format string, args ...any) {
	panic(&ShapeError{Op: op, Msg: fmt.Sprintf(format, args...)})
}

// axis normalises a possibly negative axis.
func axis(i, ndim int) int {
	if i < 0 {
		i += ndim
	}
	if i < 0 || i >= ndim {
		shapePanic("axis", "axis %d out of range for rank %d", i, ndim)
	}
	return i
}

func handles(as []Array) []*graph.Handle {
	hs := make([]*graph.Handle, len(as))
	for i, a := range as {
		hs[i] = a.h
	}
	return hs
}

// Eval evaluates arrays (which must share a graph) and waits for them. A zero Array
// among them is an error wrapping graph.ErrNilArray.
func Eval(as ...Array) error {
	if err := checkValid(as); err != nil || len(as) == 0 {
		return err
	}
	return as[0].Graph().Eval(handles(as)...)
}

// AsyncEval schedules arrays without waiting.
func AsyncEval(as ...Array) error {
	if err := checkValid(as); err != nil || len(as) == 0 {
		return err
	}
	return as[0].Graph().AsyncEval(handles(as)...)
}

// checkValid rejects zero Arrays, which have no graph to evaluate on.
func checkValid(as []Array) error {
	for i, a := range as {
		if a.h == nil {
			return fmt.Errorf("tensor: Eval argument %d: %w", i, graph.ErrNilArray)
		}
	}
	return nil
}

func bytesOf[T any](v []T) []byte {
	if len(v) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(&v[0])), len(v)*int(unsafe.Sizeof(v[0])))
}

func checkCount(op string, n int, shape []int) {
	want := 1
	for _, d := range shape {
		if d < 0 {
			shapePanic(op, "negative dimension in %v", shape)
		}
		want *= d
	}
	if n != want {
		shapePanic(op, "%d values for shape %v", n, shape)
	}
}

// FromFloat32 makes a float32 array from host data, allocating its buffer now.
func FromFloat32(g *graph.Graph, v []float32, shape ...int) Array {
	checkCount("FromFloat32", len(v), shape)
	return Array{g.FromBytes(kernels.Contiguous(Float32, shape...), bytesOf(v))}
}

// FromInt32 makes an int32 array from host data.
func FromInt32(g *graph.Graph, v []int32, shape ...int) Array {
	checkCount("FromInt32", len(v), shape)
	return Array{g.FromBytes(kernels.Contiguous(Int32, shape...), bytesOf(v))}
}

// FromBool makes a bool array from host data.
func FromBool(g *graph.Graph, v []bool, shape ...int) Array {
	checkCount("FromBool", len(v), shape)
	b := make([]byte, len(v))
	for i, x := range v {
		if x {
			b[i] = 1
		}
	}
	return Array{g.FromBytes(kernels.Contiguous(Bool, shape...), b)}
}

// FromValues makes an array of dtype dt from float64 host values (converted as a cast).
func FromValues(g *graph.Graph, dt DType, v []float64, shape ...int) Array {
	checkCount("FromValues", len(v), shape)
	b := make([]byte, len(v)*dt.Size()+4)
	for i, x := range v {
		kernels.Store(dt, b, i, x)
	}
	return Array{g.FromBytes(kernels.Contiguous(dt, shape...), b)}
}

// Scalar makes a 0-d array holding v: one live buffer (4 bytes for int32/float32),
// allocated immediately, exactly as MLX turns the 1 of `x - 1` into an array.
func Scalar(g *graph.Graph, v float64, dt DType) Array {
	var b [8]byte
	kernels.Store(dt, b[:], 0, v)
	return Array{g.FromBytes(kernels.Contiguous(dt), b[:])}
}

// Float32s evaluates a and returns its elements as float32, in row-major order.
func (a Array) Float32s() ([]float32, error) {
	out := make([]float32, a.Size())
	err := a.read(func(i int, v float64) { out[i] = float32(v) })
	return out, err
}

// Float64s evaluates a and returns its elements as float64.
func (a Array) Float64s() ([]float64, error) {
	out := make([]float64, a.Size())
	err := a.read(func(i int, v float64) { out[i] = v })
	return out, err
}

// Int32s evaluates a and returns its elements as int32.
func (a Array) Int32s() ([]int32, error) {
	out := make([]int32, a.Size())
	err := a.read(func(i int, v float64) { out[i] = int32(v) })
	return out, err
}

// Bools evaluates a and returns its elements as bool.
func (a Array) Bools() ([]bool, error) {
	out := make([]bool, a.Size())
	err := a.read(func(i int, v float64) { out[i] = v != 0 })
	return out, err
}

// Item evaluates a one-element array and returns its value.
func (a Array) Item() (float64, error) {
	if a.Size() != 1 {
		shapePanic("Item", "array of shape %v has %d elements", a.Shape(), a.Size())
	}
	v := math.NaN()
	err := a.read(func(_ int, x float64) { v = x })
	return v, err
}

// read evaluates a and visits its elements in row-major order.
func (a Array) read(visit func(i int, v float64)) error {
	b, l, err := a.Graph().Bytes(a.h)
	if err != nil {
		return err
	}
	n := l.Size()
	if n == 0 {
		return nil
	}
	var idx [kernels.MaxDims]int
	for i := 0; i < n; i++ {
		off := l.Offset
		for d := 0; d < l.NDim; d++ {
			off += idx[d] * l.Strides[d]
		}
		visit(i, kernels.Load(l.DType, b, off))
		for d := l.NDim - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < l.Shape[d] {
				break
			}
			idx[d] = 0
		}
	}
	return nil
}

// Keep makes a outlive the current scope (see WithScope); outside a scope it returns a
// unchanged. Arrays stored in caches or structs across steps are kept.
func Keep(a Array) Array {
	if a.h == nil {
		return a
	}
	return Array{a.Graph().Keep(a.h)}
}

// WithScope runs f with a scope open on g: arrays built inside are held by the scope
// and released when f returns, as a Python function's locals die at return, unless
// they were passed to Keep. It is the cheap way to build a step's graph (no
// garbage-collector tracking per array); using an unkept array after the scope panics.
func WithScope(g *graph.Graph, f func()) {
	g.BeginScope()
	defer g.EndScope()
	f()
}

// Assign stores v into *dst the way a Python assignment does: v is kept (it outlives
// the current scope) and the array *dst held before is released at once, so a buffer
// or chain that only *dst held dies now rather than at the next garbage collection.
// Use it for fields that are replaced step after step (cache state); the old value
// must not be used afterwards (that panics).
func Assign(dst *Array, v Array) {
	old := *dst
	*dst = Keep(v)
	if old.h != nil && old.h != v.h {
		old.Graph().Release(old.h)
	}
}

// Release drops a's reference now instead of when a collection finds it unreachable
// (see graph.Graph.Release): what Python does when the last name of an array goes. a
// must not be used afterwards. The invalid Array is a no-op.
func Release(a Array) {
	if a.h != nil {
		a.Graph().Release(a.h)
	}
}

// Share returns a new reference to a's node: an independent holder, as a second Python
// variable bound to the same array is. Getters that hand out an array a struct keeps
// (and may later Assign over) return a Share, so the caller's copy stays valid.
func Share(a Array) Array {
	if a.h == nil {
		return a
	}
	return Array{a.Graph().Share(a.h)}
}
