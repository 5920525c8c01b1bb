package tensor

import (
	"github.com/ingotml/ingot/kernels"
)

// Gathers and top-k. Indices are computed data, so they are checked by the kernels, not
// here: an index i into an axis of length n selects i for 0 <= i < n and i+n for
// -n <= i < 0 (numpy's wrap); any other index fails the evaluation, and the result and
// everything computed from it carry the error (a *kernels.LaunchError, wrapped).

// indexArray checks that idx holds integers and returns it as dense int32 (uint32
// values above 2^31-1 become negative and are checked as such).
func indexArray(op string, idx Array) Array {
	if dt := idx.DType(); dt != Int32 && dt != UInt32 {
		shapePanic(op, "indices must be int32 or uint32, got %s", dt)
	}
	return Contiguous(idx.AsType(Int32))
}

// Take gathers along axis with int32 indices of any shape:
// out.shape = a.shape[:axis] + idx.shape + a.shape[axis+1:] (embedding lookup, filter by
// rows). axis may be negative. a is copied first only if it is not dense row-major.
func Take(a, idx Array, ax int) Array {
	same("take", a, idx)
	if a.NDim() == 0 {
		shapePanic("take", "cannot index a 0-d array")
	}
	ax = axis(ax, a.NDim())
	idx = indexArray("take", idx)
	as := a.Shape()
	shape := append(append(append([]int(nil), as[:ax]...), idx.Shape()...), as[ax+1:]...)
	if len(shape) > kernels.MaxDims {
		shapePanic("take", "result rank %d exceeds %d", len(shape), kernels.MaxDims)
	}
	a = Contiguous(a)
	p := &kernels.TakeParams{Outer: linalgSize(as[:ax]), Axis: as[ax], Inner: linalgSize(as[ax+1:]), NIdx: idx.Size()}
	return Array{a.Graph().Apply(kernels.KTake, p, a.DType(), shape, a.h, idx.h)}
}

// TakeAlongAxis: idx has a's rank; out[..., j, ...] = a[..., idx[..., j, ...], ...] along
// axis. The other dims of a and idx broadcast (numpy's take_along_axis); the result has
// idx's size along axis.
func TakeAlongAxis(a, idx Array, ax int) Array {
	same("take_along_axis", a, idx)
	nd := a.NDim()
	if nd == 0 || idx.NDim() != nd {
		shapePanic("take_along_axis", "indices %v must have the rank of %v", idx.Shape(), a.Shape())
	}
	ax = axis(ax, nd)
	idx = indexArray("take_along_axis", idx)
	as, is := a.Shape(), idx.Shape()
	shape := make([]int, nd)
	for d := range shape {
		switch {
		case d == ax:
			shape[d] = is[d]
		case as[d] == is[d] || is[d] == 1:
			shape[d] = as[d]
		case as[d] == 1:
			shape[d] = is[d]
		default:
			shapePanic("take_along_axis", "indices %v do not broadcast with %v off axis %d", is, as, ax)
		}
	}
	src := append([]int(nil), shape...)
	src[ax] = as[ax]
	a = Contiguous(takeBroadcast(a, src))
	idx = Contiguous(takeBroadcast(idx, shape))
	p := &kernels.TakeAlongParams{Outer: linalgSize(shape[:ax]), Axis: as[ax], M: shape[ax], Inner: linalgSize(shape[ax+1:])}
	return Array{a.Graph().Apply(kernels.KTakeAlongAxis, p, a.DType(), shape, a.h, idx.h)}
}

// takeBroadcast views a with shape, or returns a itself when the shape is already right.
func takeBroadcast(a Array, shape []int) Array {
	as := a.Shape()
	for d := range as {
		if as[d] != shape[d] {
			return BroadcastTo(a, shape...)
		}
	}
	return a
}

// ArgTopK returns int32 indices [..., k] of the k largest along the last axis, in
// descending value order (ties: lower index first; NaN ranks below every number).
// 1 <= k <= min(last axis, kernels.TopKMax). Values are compared as float32 (other
// dtypes are cast first, which is exact for the half types).
func ArgTopK(a Array, k int) Array {
	if !a.Valid() {
		shapePanic("argtopk", "invalid array")
	}
	if a.NDim() == 0 {
		shapePanic("argtopk", "cannot take the top k of a 0-d array")
	}
	n := a.Dim(-1)
	if k < 1 || k > n || k > kernels.TopKMax {
		shapePanic("argtopk", "k %d out of range for last axis %d (1..min(n, %d))", k, n, kernels.TopKMax)
	}
	a = Contiguous(a.AsType(Float32))
	shape := a.Shape()
	shape[len(shape)-1] = k
	p := &kernels.TopKParams{Rows: a.Size() / n, N: n, K: k}
	return Array{a.Graph().Apply(kernels.KArgTopK, p, Int32, shape, a.h)}
}
