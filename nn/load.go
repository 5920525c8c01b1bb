package nn

import (
	"fmt"
	"slices"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/kernels"
	"github.com/ingotml/ingot/nn/checkpoint"
	"github.com/ingotml/ingot/tensor"
)

// LoadTensor places checkpoint c's tensor name on g's device as stored (float16 and
// bfloat16 stay half-width, packed weights stay packed). On the CPU device the buffer
// is the file's mapped bytes themselves (tensor.FromHost: no copy, nothing in the Go
// heap; the mapping stays pinned while the buffer lives, past Close), still counted as
// one buffer object as MLX counts a loaded weight. On Metal the tensor is bound in place
// too, at its offset in one no-copy buffer over its file's page-aligned mapping
// (c.Mapping, tensor.FromMapped, metal.GPU.MapHost); a tensor that is not 16-byte
// aligned in its file, or a file read range by range, is copied once into a device
// buffer instead.
func LoadTensor(g *graph.Graph, c *checkpoint.Checkpoint, name string) (tensor.Array, error) {
	b, info, release, err := c.Mapped(name)
	if err != nil {
		return tensor.Array{}, err
	}
	fail := func(reason string, err error) (tensor.Array, error) {
		if release != nil {
			release()
		}
		_, file, _ := c.Info(name)
		return tensor.Array{}, &checkpoint.CheckpointError{Path: file, Tensor: name, Reason: reason, Err: err}
	}
	dt, err := checkpoint.KernelDType(info.DType)
	if err != nil {
		return fail("unsupported dtype", err)
	}
	if len(info.Shape) > kernels.MaxDims {
		return fail(fmt.Sprintf("rank %d exceeds %d", len(info.Shape), kernels.MaxDims), nil)
	}
	// On the CPU device, and on Metal when the tensor is aligned in its file, FromMapped
	// uses b in place (on the CPU a later fault is the kernels' to catch:
	// graph.ErrMemoryFault); otherwise it copies b, which aliases the mapping, in this
	// goroutine: the fault guard sits here (see checkpoint.CatchFault).
	var a tensor.Array
	err = checkpoint.CatchTensorFault(name, func() error {
		a = tensor.FromMapped(g, dt, b, c.Mapping(name), release, info.Shape...)
		return nil
	})
	if err != nil {
		return tensor.Array{}, err
	}
	return a, nil
}

// LoadQuantizedWeight places a quantized module's packed weight, scales and biases on
// g, after checking them against the checkpoint's quantization (QuantSpecOf).
func LoadQuantizedWeight(g *graph.Graph, c *checkpoint.Checkpoint, module string) (tensor.QuantizedWeight, error) {
	spec, err := c.QuantSpecOf(module)
	if err != nil {
		return tensor.QuantizedWeight{}, err
	}
	var arrs [3]tensor.Array
	for i, suffix := range []string{".weight", ".scales", ".biases"} {
		if arrs[i], err = LoadTensor(g, c, module+suffix); err != nil {
			return tensor.QuantizedWeight{}, err
		}
	}
	return tensor.NewQuantizedWeight(arrs[0], arrs[1], arrs[2], spec.Bits, spec.GroupSize)
}

// LoadLinear loads module as a LinearLayer: a QuantizedLinear when <module>.scales
// exists, else a Linear; <module>.bias is used when present.
func LoadLinear(g *graph.Graph, c *checkpoint.Checkpoint, module string) (LinearLayer, error) {
	var bias tensor.Array
	if _, _, ok := c.Info(module + ".bias"); ok {
		var err error
		if bias, err = LoadTensor(g, c, module+".bias"); err != nil {
			return nil, err
		}
	}
	if c.Quantized(module) {
		w, err := LoadQuantizedWeight(g, c, module)
		if err != nil {
			return nil, err
		}
		return &QuantizedLinear{QuantizedWeight: w, Bias: bias}, nil
	}
	w, err := LoadTensor(g, c, module+".weight")
	if err != nil {
		return nil, err
	}
	return &Linear{Weight: w, Bias: bias}, nil
}

// LoadEmbedding loads module as an EmbeddingLayer: quantized when <module>.scales exists.
func LoadEmbedding(g *graph.Graph, c *checkpoint.Checkpoint, module string) (EmbeddingLayer, error) {
	if c.Quantized(module) {
		w, err := LoadQuantizedWeight(g, c, module)
		if err != nil {
			return nil, err
		}
		return &QuantizedEmbedding{QuantizedWeight: w}, nil
	}
	w, err := LoadTensor(g, c, module+".weight")
	if err != nil {
		return nil, err
	}
	return &Embedding{Weight: w}, nil
}

// LoadExperts loads the stacked experts under prefix (mlx-lm's "...mlp.switch_mlp"
// holding gate_proj, up_proj [E, I, H] and down_proj [E, H, I]): quantized when their
// .scales exist.
func LoadExperts(g *graph.Graph, c *checkpoint.Checkpoint, prefix string) (ExpertsLayer, error) {
	names := [3]string{prefix + ".gate_proj", prefix + ".up_proj", prefix + ".down_proj"}
	if c.Quantized(names[0]) {
		var w [3]tensor.QuantizedWeight
		for i, m := range names {
			var err error
			if w[i], err = LoadQuantizedWeight(g, c, m); err != nil {
				return nil, err
			}
		}
		return &QuantizedSwitchGLU{Gate: w[0], Up: w[1], Down: w[2]}, nil
	}
	var w [3]tensor.Array
	for i, m := range names {
		var err error
		if w[i], err = LoadTensor(g, c, m+".weight"); err != nil {
			return nil, err
		}
	}
	return &SwitchGLU{Gate: w[0], Up: w[1], Down: w[2]}, nil
}

// UploadQuantized places a host-quantized tensor's packed weight, scales and biases on
// g's device (one copy of the packed bytes into device buffers; nothing is dequantized).
func UploadQuantized(g *graph.Graph, t *checkpoint.QuantizedTensor) (tensor.QuantizedWeight, error) {
	words, groups, err := kernels.CheckQuant(t.Shape[len(t.Shape)-1], t.Bits, t.GroupSize)
	if err != nil {
		return tensor.QuantizedWeight{}, err
	}
	dt, err := checkpoint.KernelDType(t.ScaleType)
	if err != nil {
		return tensor.QuantizedWeight{}, err
	}
	lead := t.Shape[:len(t.Shape)-1]
	ws := append(slices.Clone(lead), words)
	ss := append(slices.Clone(lead), groups)
	w := tensor.FromBytes(g, tensor.UInt32, t.WeightBytes(), ws...)
	s := tensor.FromBytes(g, dt, t.Scales, ss...)
	b := tensor.FromBytes(g, dt, t.Biases, ss...)
	return tensor.NewQuantizedWeight(w, s, b, t.Bits, t.GroupSize)
}
