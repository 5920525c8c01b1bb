package nn

import (
	"slices"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn/checkpoint"
	"github.com/ingotml/ingot/tensor"
)

// Builder makes a model's layers from a Source's parameters and keeps the first
// error: the one place a family asks for parameters, so a layer type chosen by what
// the checkpoint holds (a quantized linear) plugs in here for every family. A family
// writes its build once, as a function of a *Builder; run on a dry builder (Record)
// the same function makes nothing and records each parameter it asks for, with how
// the source stores it. That record is the model's Description, so the description
// and the build cannot disagree.
type Builder struct {
	g    *graph.Graph
	src  Source
	err  error
	desc *Description // non-nil: a dry run recording parameters
}

// NewBuilder returns a builder placing src's parameters on g.
func NewBuilder(g *graph.Graph, src Source) *Builder { return &Builder{g: g, src: src} }

// Record runs draw on a dry builder over src: nothing is read or allocated, and each
// parameter draw asks for is added to d.Params. It returns d, or the first error.
func Record(d *Description, src Source, draw func(*Builder)) (*Description, error) {
	b := &Builder{src: src, desc: d}
	draw(b)
	if b.err != nil {
		return nil, b.err
	}
	return d, nil
}

// Graph is the graph parameters are placed on (nil in a dry run).
func (b *Builder) Graph() *graph.Graph { return b.g }

// Err is the first error met.
func (b *Builder) Err() error { return b.err }

// Fail records err unless an error is already kept.
func (b *Builder) Fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// record adds one parameter to a dry run's description.
func (b *Builder) record(name string, quantizable bool, shape []int, st Stored) {
	b.desc.Params = append(b.desc.Params, Param{Name: name, Shape: slices.Clone(shape), Quantizable: quantizable, Stored: st})
}

// Host loads one parameter (nothing after the first error; ok false in a dry run).
func (b *Builder) Host(name string, k Kind, shape ...int) (Host, bool) {
	if b.err != nil {
		return Host{}, false
	}
	p := Spec{Name: name, Kind: k, Shape: shape}
	if b.desc != nil {
		st, err := b.src.Stored(p)
		if err != nil {
			b.err = err
		} else {
			b.record(name, k.Quantizable(), shape, st)
		}
		return Host{}, false
	}
	h, err := b.src.Load(p)
	if err != nil {
		b.err = err
		return Host{}, false
	}
	return h, true
}

// Array loads one parameter onto the device in its stored dtype (invalid after an
// error or in a dry run). Mapped bytes are copied (where the device copies) under the
// fault guard, so a file that shrank names its tensor (checkpoint.CatchFault).
func (b *Builder) Array(name string, k Kind, shape ...int) tensor.Array {
	h, ok := b.Host(name, k, shape...)
	if !ok {
		return tensor.Array{}
	}
	if h.Release == nil {
		return h.Array(b.g)
	}
	var a tensor.Array
	if err := checkpoint.CatchTensorFault(h.Tensor, func() error { a = h.Array(b.g); return nil }); err != nil {
		b.err = err
		return tensor.Array{}
	}
	return a
}

// Quantized loads module's quantized weight if the source stores one (nothing after
// the first error). A dry run records it and returns a zero weight.
func (b *Builder) Quantized(module string, shape ...int) (tensor.QuantizedWeight, bool) {
	if b.err != nil {
		return tensor.QuantizedWeight{}, false
	}
	if b.desc != nil {
		st, ok, err := b.src.StoredQuantized(module, shape)
		if err != nil {
			b.err = err
		} else if ok {
			b.record(module+".weight", true, shape, st)
		}
		return tensor.QuantizedWeight{}, ok
	}
	q, ok, err := b.src.Quantized(b.g, module, shape)
	if err != nil {
		b.err = err
		return tensor.QuantizedWeight{}, false
	}
	return q, ok
}

// Linear makes module's [out, in] projection (quantized when the source stores it
// so), with module.bias [out] when bias is set.
func (b *Builder) Linear(module string, out, in int, bias bool) LinearLayer {
	var bv tensor.Array
	if bias {
		bv = b.Array(module+".bias", KindBias, out)
	}
	if q, ok := b.Quantized(module, out, in); ok {
		return &QuantizedLinear{QuantizedWeight: q, Bias: bv}
	}
	return &Linear{Weight: b.Array(module+".weight", KindWeight, out, in), Bias: bv}
}

// Embedding makes module's [vocab, dim] table and returns the activations' dtype: the
// table's, as in MLX, or float32 for a quantized table (the quant kernels compute and
// return float32).
func (b *Builder) Embedding(module string, vocab, dim int) (EmbeddingLayer, tensor.DType) {
	if q, ok := b.Quantized(module, vocab, dim); ok {
		return &QuantizedEmbedding{QuantizedWeight: q}, tensor.Float32
	}
	w := b.Array(module+".weight", KindEmbed, vocab, dim)
	if !w.Valid() {
		return nil, tensor.Float32
	}
	return &Embedding{Weight: w}, w.DType()
}

// Norm makes an RMSNorm of width dim from the weight name of kind k (KindNorm or
// KindCentredNorm).
func (b *Builder) Norm(name string, k Kind, dim int, eps float64) RMSNorm {
	return RMSNorm{Weight: b.Array(name, k, dim), Eps: eps}
}

// MLP makes the SwiGLU block prefix{gate,up,down}_proj of width h and inner width inter.
func (b *Builder) MLP(prefix string, h, inter int) *MLP {
	return &MLP{
		Gate: b.Linear(prefix+"gate_proj", inter, h, false),
		Up:   b.Linear(prefix+"up_proj", inter, h, false),
		Down: b.Linear(prefix+"down_proj", h, inter, false),
	}
}

// Head makes the output head "lm_head" [vocab, h], or the embedding's table when tied.
func (b *Builder) Head(tied bool, embed EmbeddingLayer, vocab, h int) LinearLayer {
	if tied {
		return TiedHead{embed}
	}
	return b.Linear("lm_head", vocab, h, false)
}
