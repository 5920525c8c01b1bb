package tensor

import (
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/kernels"
)

// The door for bytes that come from outside the graph (a checkpoint's tensors, host
// quantization's output): the layers above tensor place device bytes only through
// these two, so none of them needs the graph's handles.

// FromBytes makes an evaluated array of dtype dt and shape from little-endian host
// bytes, copied into a buffer allocated now (an allocator failure is carried by the
// array, as for every constructor). b must hold at least the shape's bytes.
func FromBytes(g *graph.Graph, dt DType, b []byte, shape ...int) Array {
	return Array{g.FromBytes(kernels.Contiguous(dt, shape...), b)}
}

// FromHost is FromBytes for bytes the caller keeps alive elsewhere (a weight mapped
// from its file): where the device reads host memory in place (the CPU device) the
// buffer is b itself, counted as one buffer object as a copy would be, and release is
// called when that buffer is freed; elsewhere b is copied and release called at once
// (graph.Graph.FromHost). b must not change while the array lives.
func FromHost(g *graph.Graph, dt DType, b []byte, release func(), shape ...int) Array {
	return Array{g.FromHost(kernels.Contiguous(dt, shape...), b, release)}
}

// FromMapped is FromHost for bytes that lie within mapping, the whole page-aligned
// mapping of their file (checkpoint.Checkpoint.Mapping): on a device that binds mapped
// memory in place (Metal: one no-copy buffer per file) b is used there, not copied
// (graph.Graph.FromMapped). A nil mapping is FromHost.
func FromMapped(g *graph.Graph, dt DType, b, mapping []byte, release func(), shape ...int) Array {
	return Array{g.FromMapped(kernels.Contiguous(dt, shape...), b, mapping, release)}
}
