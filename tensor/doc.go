// Package tensor is ingot's array API: lazy n-d arrays (Array) and the ops that build
// them, over the graph package. Ops compute output shapes and pick a kernel; nothing
// runs until Eval. Views (Reshape, Transpose, Slice, BroadcastTo, ExpandDims, Squeeze)
// share their input's buffer. Scalar and the *Scalar ops allocate a fresh 0-d array at
// once, exactly as MLX does for the 1 in `x - 1`: that is what a dead chain pins.
//
// Shape mismatches and other programming errors panic with a *ShapeError naming the op
// and shapes. Allocator failures never panic: they are carried by the array (Err) and
// returned by Eval.
package tensor
