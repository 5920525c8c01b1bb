package nn

import (
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/kernels"
	"github.com/ingotml/ingot/tensor"
)

// Host is a dense row-major tensor on the host in its stored dtype: how a loader holds
// a checkpoint tensor between the file and the device, so weights reach the device in
// the dtype they were saved in (float32, float16 or bfloat16).
type Host struct {
	DType tensor.DType
	Shape []int
	Data  []byte // len = elements * DType.Size()
	// Release, when set, says Data is a checkpoint's mapped bytes, pinned until
	// Release is called: Array then uses them in place (tensor.FromHost) and hands the
	// pin to the buffer; any other use ends with Done.
	Release func()
	// Tensor names the checkpoint tensor Data maps (with Release), for the error of a
	// fault while the bytes are copied.
	Tensor string
}

// HostFloat32 wraps float32 values.
func HostFloat32(v []float32, shape ...int) Host {
	b := make([]byte, 4*len(v))
	f := kernels.F32(b)
	copy(f, v)
	return Host{DType: tensor.Float32, Shape: shape, Data: b}
}

// Len is the number of elements.
func (h Host) Len() int { return len(h.Data) / h.DType.Size() }

// At returns element i as float64 (exact for every float dtype).
func (h Host) At(i int) float64 { return kernels.Load(h.DType, h.Data, i) }

// Map returns a copy with f applied to every element, rounded back to h's dtype as a
// cast would (the way MLX adds 1 to a bfloat16 norm weight: computed wider, stored in
// the weight's own dtype).
func (h Host) Map(f func(float64) float64) Host {
	defer h.Done()
	out := Host{DType: h.DType, Shape: h.Shape, Data: make([]byte, len(h.Data))}
	for i := 0; i < h.Len(); i++ {
		kernels.Store(h.DType, out.Data, i, f(h.At(i)))
	}
	return out
}

// As returns a copy of h's values rounded to dtype dt, as a cast would.
func (h Host) As(dt tensor.DType) Host {
	defer h.Done()
	out := Host{DType: dt, Shape: h.Shape, Data: make([]byte, h.Len()*dt.Size())}
	for i := 0; i < h.Len(); i++ {
		kernels.Store(dt, out.Data, i, h.At(i))
	}
	return out
}

// Float32s returns the values widened to float32.
func (h Host) Float32s() []float32 {
	v := make([]float32, h.Len())
	for i := range v {
		v[i] = float32(h.At(i))
	}
	return v
}

// Array places h on g as an array of h's dtype and shape: pinned mapped bytes in place
// where the device allows (their pin then belongs to the buffer), anything else copied.
func (h Host) Array(g *graph.Graph) tensor.Array {
	if h.Release != nil {
		return tensor.FromHost(g, h.DType, h.Data, h.Release, h.Shape...)
	}
	return tensor.FromBytes(g, h.DType, h.Data, h.Shape...)
}

// Done ends a use of h that did not go through Array: it releases a pin.
func (h Host) Done() {
	if h.Release != nil {
		h.Release()
	}
}
