package tensor

import (
	"github.com/ingotml/ingot/kernels"
)

// Reductions along one axis. The kernels reduce the last axis of a contiguous input, so
// another axis is first moved last and copied; a float32 contiguous input reduced along
// its last axis costs exactly one node. Kernels see float32, int32 or uint32 (half
// floats are reduced in float32 and cast back; bool is counted as int32; mean and
// logsumexp always compute in float32).

// opAxis normalises axis ax of a rank-nd array for op, or panics with a ShapeError.
func opAxis(op string, ax, nd int) int {
	if nd == 0 {
		shapePanic(op, "needs an axis; the array is 0-d")
	}
	if ax < -nd || ax >= nd {
		shapePanic(op, "axis %d out of range for rank %d", ax, nd)
	}
	if ax < 0 {
		ax += nd
	}
	return ax
}

// moveLast views a with axis ax moved to the end, the other axes in order, and returns
// the permutation that moves it back (nil when ax already is last).
func moveLast(a Array, ax int) (Array, []int) {
	nd := a.NDim()
	if ax == nd-1 {
		return a, nil
	}
	perm := make([]int, 0, nd)
	for i := 0; i < nd; i++ {
		if i != ax {
			perm = append(perm, i)
		}
	}
	perm = append(perm, ax)
	back := make([]int, nd)
	for i, p := range perm {
		back[p] = i
	}
	return Transpose(a, perm...), back
}

func reduce(op *kernels.ReduceOp, a Array, ax int, keep bool) Array {
	if !a.Valid() {
		shapePanic(op.Name, "invalid array")
	}
	ax = opAxis(op.Name, ax, a.NDim())
	if op == kernels.RedArgmax && a.Dim(ax) == 0 {
		shapePanic(op.Name, "axis %d of %v is empty", ax, a.Shape())
	}
	in := a.DType()
	kin := in // the kernel's input dtype
	switch {
	case op == kernels.RedMean || op == kernels.RedLogSumExp || in.IsFloat():
		kin = Float32
	case in == Bool:
		kin = Int32
	}
	kout, res := kin, in // the kernel's output dtype and the result's
	switch {
	case op == kernels.RedArgmax:
		kout, res = Int32, Int32
	case (op == kernels.RedMean || op == kernels.RedLogSumExp) && !in.IsFloat():
		res = Float32
	case op == kernels.RedSum && in == Bool:
		res = Int32
	}
	a, _ = moveLast(a, ax)
	a = Contiguous(a.AsType(kin))
	shape := a.Shape()[:a.NDim()-1]
	r := Array{a.Graph().Apply(kernels.ReduceKernel(op), nil, kout, shape, a.h)}
	r = r.AsType(res)
	if keep {
		r = ExpandDims(r, ax)
	}
	return r
}

// Sum adds along axis (keepDims keeps it with size 1). Bool counts as int32.
func Sum(a Array, axis int, keepDims bool) Array { return reduce(kernels.RedSum, a, axis, keepDims) }

// Max is the largest element along axis (NaN if any is NaN).
func Max(a Array, axis int, keepDims bool) Array { return reduce(kernels.RedMax, a, axis, keepDims) }

// Min is the smallest element along axis (NaN if any is NaN).
func Min(a Array, axis int, keepDims bool) Array { return reduce(kernels.RedMin, a, axis, keepDims) }

// Mean averages along axis; integer inputs give float32.
func Mean(a Array, axis int, keepDims bool) Array { return reduce(kernels.RedMean, a, axis, keepDims) }

// Argmax is the int32 index of the largest element along axis: ties go to the lowest
// index, and a NaN counts as the largest. The axis must not be empty.
func Argmax(a Array, axis int, keepDims bool) Array {
	return reduce(kernels.RedArgmax, a, axis, keepDims)
}

// LogSumExp is log(sum(exp(a))) along axis, computed stably (shifted by the maximum);
// integer inputs give float32.
func LogSumExp(a Array, axis int, keepDims bool) Array {
	return reduce(kernels.RedLogSumExp, a, axis, keepDims)
}
