package qwen3

import (
	"fmt"
	"path/filepath"
	"slices"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/kernels"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/checkpoint"
	"github.com/ingotml/ingot/tensor"
)

// kind says how a parameter is initialised at random and whether a checkpoint may
// store it quantized.
type kind int

const (
	kindWeight kind = iota // a linear weight [out, in]
	kindBias               // a linear bias [out]
	kindEmbed              // the embedding table [vocab, H]
	kindNorm               // an RMSNorm weight, used as stored
)

// source supplies parameters. With g nil it only checks and says how the parameter is
// stored (a dry run: nothing is read or allocated); with g it also places it on g. So
// a check and a load are one code path.
type source interface {
	// float returns the float parameter name of shape.
	float(g *graph.Graph, name string, k kind, shape []int) (tensor.Array, nn.Stored, error)
	// quantized returns module's affine-quantized weight of float shape [out, in], with
	// ok false when the module is stored in float.
	quantized(g *graph.Graph, module string, shape []int) (w tensor.QuantizedWeight, st nn.Stored, ok bool, err error)
}

// builder makes layers from a source's parameters and keeps the first error. It is
// the one place parameters are asked for: a dry builder (g nil) makes nothing and
// records each parameter the build asks for into desc, which is the model's
// nn.Description, so the description and the build cannot disagree.
type builder struct {
	g    *graph.Graph
	src  source
	err  error
	desc *nn.Description // the dry run's record
}

func (b *builder) record(name string, k kind, shape []int, st nn.Stored) {
	if b.desc != nil {
		q := k == kindWeight || k == kindEmbed
		b.desc.Params = append(b.desc.Params, nn.Param{Name: name, Shape: slices.Clone(shape), Quantizable: q, Stored: st})
	}
}

// array draws one float parameter (invalid after an error or in a dry run).
func (b *builder) array(name string, k kind, shape ...int) tensor.Array {
	if b.err != nil {
		return tensor.Array{}
	}
	a, st, err := b.src.float(b.g, name, k, shape)
	if err != nil {
		b.err = err
		return tensor.Array{}
	}
	b.record(name, k, shape, st)
	return a
}

// quantized draws module's quantized weight when the source stores one.
func (b *builder) quantized(module string, k kind, shape ...int) (tensor.QuantizedWeight, bool) {
	if b.err != nil {
		return tensor.QuantizedWeight{}, false
	}
	w, st, ok, err := b.src.quantized(b.g, module, shape)
	if err != nil {
		b.err = err
		return tensor.QuantizedWeight{}, false
	}
	if ok {
		b.record(module+".weight", k, shape, st)
	}
	return w, ok
}

// linear makes module's [out, in] projection (quantized or float), with its bias.
func (b *builder) linear(module string, out, in int, bias bool) nn.LinearLayer {
	var bv tensor.Array
	if bias {
		bv = b.array(module+".bias", kindBias, out)
	}
	if q, ok := b.quantized(module, kindWeight, out, in); ok {
		return &nn.QuantizedLinear{QuantizedWeight: q, Bias: bv}
	}
	return &nn.Linear{Weight: b.array(module+".weight", kindWeight, out, in), Bias: bv}
}

// embedding makes the [vocab, dim] table and returns the activations' dtype.
func (b *builder) embedding(module string, vocab, dim int) (nn.EmbeddingLayer, tensor.DType) {
	if q, ok := b.quantized(module, kindEmbed, vocab, dim); ok {
		return &nn.QuantizedEmbedding{QuantizedWeight: q}, tensor.Float32
	}
	w := b.array(module+".weight", kindEmbed, vocab, dim)
	if !w.Valid() {
		return &nn.Embedding{}, tensor.Float32
	}
	return &nn.Embedding{Weight: w}, w.DType()
}

func (b *builder) norm(name string, dim int, eps float64) nn.RMSNorm {
	return nn.RMSNorm{Weight: b.array(name, kindNorm, dim), Eps: eps}
}

// fileSource reads parameters from a checkpoint: Hugging Face's names, which
// mlx-community's conversions keep (their quantized modules add .scales and .biases).
type fileSource struct{ ck *checkpoint.Checkpoint }

// fail builds a WeightError naming the file that holds (or should hold) name.
func (s fileSource) fail(name string, err error, format string, args ...any) error {
	file := s.ck.Dir
	if _, f, ok := s.ck.Info(name); ok {
		file = f
	} else if files := s.ck.Files(); len(files) == 1 {
		file = files[0]
	}
	return &nn.WeightError{Model: "qwen3", File: file, Tensor: name, Reason: fmt.Sprintf(format, args...), Err: err}
}

func (s fileSource) float(g *graph.Graph, name string, _ kind, shape []int) (tensor.Array, nn.Stored, error) {
	t, _, ok := s.ck.Info(name)
	if !ok {
		return tensor.Array{}, nn.Stored{}, s.fail(name, checkpoint.ErrTensorNotFound, "not found")
	}
	if !slices.Equal(t.Shape, shape) {
		return tensor.Array{}, nn.Stored{}, s.fail(name, nn.ErrShape, "shape %v, want %v", t.Shape, shape)
	}
	if _, ok := checkpoint.EngineDType(t.DType); !ok {
		return tensor.Array{}, nn.Stored{}, s.fail(name, checkpoint.ErrDTypeMismatch, "unsupported dtype %s (want F32, F16 or BF16)", t.DType)
	}
	st := nn.Stored{Tensors: []string{name}, DType: string(t.DType), Bytes: t.End - t.Begin}
	if g == nil {
		return tensor.Array{}, st, nil
	}
	a, err := nn.LoadTensor(g, s.ck, name)
	if err != nil {
		return tensor.Array{}, st, fmt.Errorf("qwen3: %w", err)
	}
	return a, st, nil
}

func (s fileSource) quantized(g *graph.Graph, module string, shape []int) (tensor.QuantizedWeight, nn.Stored, bool, error) {
	if !s.ck.Quantized(module) {
		return tensor.QuantizedWeight{}, nn.Stored{}, false, nil
	}
	spec, err := s.ck.QuantSpecOf(module)
	if err != nil {
		return tensor.QuantizedWeight{}, nn.Stored{}, false, fmt.Errorf("qwen3: %w", err)
	}
	st := nn.Stored{DType: string(checkpoint.U32), Bits: spec.Bits, Group: spec.GroupSize, Quantized: true}
	for _, suffix := range []string{".weight", ".scales", ".biases"} {
		t, _, _ := s.ck.Info(module + suffix)
		st.Tensors = append(st.Tensors, module+suffix)
		st.Bytes += t.End - t.Begin
	}
	w, _, _ := s.ck.Info(module + ".weight")
	cols, _ := kernels.QuantCols(w.Shape[len(w.Shape)-1], spec.Bits, spec.GroupSize)
	if got := append(slices.Clone(w.Shape[:len(w.Shape)-1]), cols); !slices.Equal(got, shape) {
		return tensor.QuantizedWeight{}, nn.Stored{}, false, s.fail(module+".weight", nn.ErrShape, "quantized matrix %v, want %v", got, shape)
	}
	if g == nil {
		return tensor.QuantizedWeight{}, st, true, nil
	}
	q, err := nn.LoadQuantizedWeight(g, s.ck, module)
	if err != nil {
		return q, st, false, fmt.Errorf("qwen3: %w", err)
	}
	return q, st, true, nil
}

// config parses an open checkpoint's config.json.
func config(ck *checkpoint.Checkpoint) (*Config, error) {
	cfg, err := ParseHFConfig(ck.Config)
	if err != nil {
		return nil, fmt.Errorf("qwen3: load config %s: %w", filepath.Join(ck.Dir, "config.json"), err)
	}
	return cfg, nil
}

// LoadCheckpoint builds the model of an open checkpoint (nn/models' Load and
// LoadCheckpoint are the way in): config.json (HF layout) and the weights, Hugging
// Face's names. Modules stored with MLX's affine quantization (<module>.scales
// present, config's quantization block) load as quantized layers and stay packed on
// the device. Weights keep their stored dtype. ck stays open; the caller closes it.
func LoadCheckpoint(ck *checkpoint.Checkpoint, g *graph.Graph, opt nn.Options) (*Model, error) {
	cfg, err := config(ck)
	if err != nil {
		return nil, err
	}
	return build(cfg, g, fileSource{ck}, opt)
}

// InspectCheckpoint checks an open checkpoint exactly as LoadCheckpoint would
// (config.json, then every tensor the model reads: name, shape, dtype and
// quantization) from the safetensors headers alone, and describes the model it holds:
// a checkpoint LoadCheckpoint refuses, InspectCheckpoint refuses with the same error.
// ck stays open.
func InspectCheckpoint(ck *checkpoint.Checkpoint) (*nn.Description, error) {
	cfg, err := config(ck)
	if err != nil {
		return nil, err
	}
	d, err := describe(cfg, fileSource{ck})
	if err != nil {
		return nil, err
	}
	d.SetStorage(ck)
	return d, nil
}

// cacheBuffersPerLayer is what a batch run holds per layer besides the weights once
// one request decodes: the KV cache's keys, values, offset and left padding and its
// mask's source. cmd/decode's TestPredictOnlyMatchesRun pins it against a real run.
const cacheBuffersPerLayer = 5

// plainCacheBuffersPerLayer is the same on the plain path: the keys and values.
const plainCacheBuffersPerLayer = 2

// Describe returns what the random model of cfg is made of (float32 parameters), from
// a dry run of the build: nothing is allocated.
func Describe(cfg *Config) (*nn.Description, error) { return describe(cfg, randomSource{}) }

// describe runs build's parameter draws dry over src.
func describe(cfg *Config, src source) (*nn.Description, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	d := &nn.Description{
		ModelType:                 cfg.ModelType,
		Kinds:                     cfg.Kinds(),
		Hidden:                    cfg.HiddenSize,
		Vocab:                     cfg.VocabSize,
		KVWidth:                   cfg.NumKVHeads * cfg.HeadDim,
		CacheBuffersPerLayer:      cacheBuffersPerLayer,
		PlainCacheBuffersPerLayer: plainCacheBuffersPerLayer,
	}
	b := &builder{src: src, desc: d}
	draw(cfg, b)
	if b.err != nil {
		return nil, b.err
	}
	return d, nil
}
