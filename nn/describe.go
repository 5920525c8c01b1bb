package nn

import (
	"errors"
	"fmt"

	"github.com/ingotml/ingot/nn/checkpoint"
)

// Param is one parameter array a model is built from.
type Param struct {
	// Name is the model's own name for it (Hugging Face's runtime naming, for example
	// "model.layers.3.mlp.experts.gate_proj" for a stacked expert bank).
	Name string
	// Shape is the float shape the model uses.
	Shape []int
	// Quantizable: a checkpoint may store it affine-quantized (linear weights,
	// embeddings, expert banks), as three arrays in place of one.
	Quantizable bool
	// Stored is how a checkpoint holds it; the zero value for a random model's
	// parameter (one float32 array).
	Stored Stored
}

// Stored is how a checkpoint holds one parameter, read from the safetensors headers.
type Stored struct {
	Tensors     []string // the checkpoint tensors read for it, in the file's naming
	DType       string   // the stored dtype ("BF16", ...; "U32" when quantized)
	Bytes       int64    // bytes read from the files
	Bits, Group int      // the quantization, when Quantized
	Quantized   bool
}

// Buffers is how many device buffers the parameter becomes: three for a quantized
// module (packed weight, scales, biases), else one (a stacked expert bank is one).
func (p Param) Buffers() int {
	if p.Stored.Quantized {
		return 3
	}
	return 1
}

// Bytes is what the parameter holds on the device: the stored bytes for a checkpoint's,
// float32 elements for a random model's. ok is false when the size overflows int64.
func (p Param) Bytes() (n int64, ok bool) {
	if p.Stored.Tensors != nil {
		return p.Stored.Bytes, true
	}
	n = 4
	for _, d := range p.Shape {
		if n, ok = MulInt64(n, int64(d)); !ok {
			return 0, false
		}
	}
	return n, true
}

// Description is what a model of one configuration is made of, known before anything
// is built: its layer kinds, every parameter, its constants and the cache buffers a
// decoding request holds. The loader, the memory estimate, --predict-only and the
// baseline all read it; each model package makes it by running its own build in a
// recording mode, so it cannot drift from what the build loads.
type Description struct {
	ModelType string
	Kinds     []LayerKind // each layer's mixer, in order
	Sparse    int         // layers whose feed-forward block is a mixture of experts
	Experts   int         // routed experts per sparse layer (0 for a dense model)
	Hidden    int
	Vocab     int
	// KVWidth is an attention layer's key (and value) width per token: kv heads x
	// head dim.
	KVWidth int
	Params  []Param
	// Constants is how many small constant arrays the model builds beside its weights.
	Constants int
	// CacheBuffersPerLayer is how many buffer objects one decoding request holds per
	// layer in a batch run once it decodes (the cache state and batch metadata).
	CacheBuffersPerLayer int
	// PlainCacheBuffersPerLayer is the same on the plain path (generate_step), whose
	// caches hold their state arrays only.
	PlainCacheBuffersPerLayer int
	// Files is how many weight files a checkpoint has (0 for a random model).
	Files int
	// Weights names how a checkpoint stores the weights ("float (bfloat16)", "4-bit
	// g64 affine, ..."); empty for a random model.
	Weights string
}

// SetStorage fills in what a checkpoint's description adds: how the tensors its
// parameters read are stored (Weights) and how many weight files ck has (Files).
func (d *Description) SetStorage(ck *checkpoint.Checkpoint) {
	var names []string
	for _, p := range d.Params {
		names = append(names, p.Stored.Tensors...)
	}
	d.Weights = ck.DescribeStorage(names)
	d.Files = len(ck.Files())
}

// Layers is the number of decoder layers.
func (d *Description) Layers() int { return len(d.Kinds) }

// WeightBuffers is how many device buffers the parameters become.
func (d *Description) WeightBuffers() int {
	n := 0
	for _, p := range d.Params {
		n += p.Buffers()
	}
	return n
}

// ErrTooLarge is wrapped by the error for a model whose size does not fit in int64.
var ErrTooLarge = errors.New("model size overflows int64")

// WeightBytes is the parameters' device bytes and the largest parameter's.
func (d *Description) WeightBytes() (total, largest int64, err error) {
	for _, p := range d.Params {
		n, ok := p.Bytes()
		if ok {
			total, ok = AddInt64(total, n)
		}
		if !ok {
			return 0, 0, fmt.Errorf("%s %v: %w", p.Name, p.Shape, ErrTooLarge)
		}
		largest = max(largest, n)
	}
	return total, largest, nil
}
