package qwen35

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ingotml/ingot/nn/checkpoint"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/tensor"
)

// paramKind says how a parameter is stored in checkpoints and how it is initialised at
// random.
type paramKind int

const (
	kindWeight    paramKind = iota // a linear weight [out, in], as stored
	kindBias                       // a linear bias [out]
	kindEmbed                      // the embedding table [vocab, H]
	kindNorm                       // a zero-centred RMSNorm weight: HF stores w, the model uses 1 + w
	kindGatedNorm                  // linear_attn.norm: used as stored
	kindConv                       // conv1d weight, [C, K] here ([C, 1, K] in HF, [C, K, 1] in mlx-lm)
	kindALog                       // A_log [Hv]
	kindDtBias                     // dt_bias [Hv]
	kindExperts                    // stacked experts "<mlp>.experts.<proj>": gate/up [E, I, H], down [E, H, I]
)

// param names one parameter by its HF runtime name (or, for kindExperts, the virtual
// name "model.layers.<i>.mlp.experts.<gate_proj|up_proj|down_proj>") and gives the
// shape the model uses.
type param struct {
	name  string
	kind  paramKind
	shape []int
}

// source supplies parameter values in the model's layout (norms already 1 + w, conv
// [C, K], experts stacked) and in their stored dtype.
type source interface {
	load(p param) (nn.Host, error)
	// quantized returns module's affine-quantized weight placed on g, with ok false
	// when the checkpoint stores the module in float (no <module>.scales). shape is the
	// float matrix the model expects ([out, in], or [E, out, in] for stacked experts).
	quantized(g *graph.Graph, module string, shape []int) (w nn.QuantizedWeight, ok bool, err error)
	// mlxLM reports a checkpoint written by mlx-lm, whose model rules apply.
	mlxLM() bool
}

// builder draws parameters from a source and keeps the first error. It is the one
// place where layers are made from parameters, so a layer type chosen by what the
// checkpoint holds (e.g. a quantized linear) plugs in here.
type builder struct {
	g   *graph.Graph
	src source
	err error
}

// host loads one parameter (nothing after the first error).
func (b *builder) host(name string, kind paramKind, shape ...int) (nn.Host, bool) {
	if b.err != nil {
		return nn.Host{}, false
	}
	h, err := b.src.load(param{name: name, kind: kind, shape: shape})
	if err != nil {
		b.err = err
		return nn.Host{}, false
	}
	return h, true
}

// array loads one parameter onto the device in its stored dtype.
func (b *builder) array(name string, kind paramKind, shape ...int) tensor.Array {
	h, ok := b.host(name, kind, shape...)
	if !ok {
		return tensor.Array{}
	}
	return h.Array(b.g)
}

// linear loads p.weight [out, in] and, with bias, p.bias [out]. Every linear layer of
// the model is made here.
func (b *builder) linear(p string, out, in int, bias bool) nn.LinearLayer {
	var bv tensor.Array
	if bias {
		bv = b.array(p+".bias", kindBias, out)
	}
	if q, ok := b.quantized(p, out, in); ok {
		return &nn.QuantizedLinear{QuantizedWeight: q, Bias: bv}
	}
	return &nn.Linear{Weight: b.array(p+".weight", kindWeight, out, in), Bias: bv}
}

// quantized loads module's quantized weight if the checkpoint stores one (nothing
// after the first error).
func (b *builder) quantized(module string, shape ...int) (nn.QuantizedWeight, bool) {
	if b.err != nil {
		return nn.QuantizedWeight{}, false
	}
	q, ok, err := b.src.quantized(b.g, module, shape)
	if err != nil {
		b.err = err
		return nn.QuantizedWeight{}, false
	}
	return q, ok
}

// embedding loads the [vocab, dim] table name; its dtype is the model's activation
// dtype.
func (b *builder) embedding(name string, vocab, dim int) (nn.EmbeddingLayer, tensor.DType) {
	if q, ok := b.quantized(strings.TrimSuffix(name, ".weight"), vocab, dim); ok {
		// The quant kernels compute and return float32, so activations are float32.
		return &nn.QuantizedEmbedding{QuantizedWeight: q}, tensor.Float32
	}
	w := b.array(name, kindEmbed, vocab, dim)
	if !w.Valid() {
		return nil, tensor.Float32
	}
	return &nn.Embedding{Weight: w}, w.DType()
}

// mlp loads a SwiGLU block p{gate,up,down}_proj.
func (b *builder) mlp(p string, h, inter int) *nn.MLP {
	return &nn.MLP{
		Gate: b.linear(p+"gate_proj", inter, h, false),
		Up:   b.linear(p+"up_proj", inter, h, false),
		Down: b.linear(p+"down_proj", h, inter, false),
	}
}

// ErrShape is wrapped by a WeightError for a tensor whose shape the config rules out.
var ErrShape = errors.New("wrong shape")

// WeightError reports a checkpoint tensor that is missing, misshapen or of an
// unsupported dtype. Err is checkpoint.ErrTensorNotFound, ErrShape or checkpoint.ErrDTypeMismatch.
type WeightError struct {
	File   string
	Tensor string
	Reason string
	Err    error
}

// Error formats the error as "qwen35: <file>: tensor <name>: <reason>".
func (e *WeightError) Error() string {
	return checkpoint.Printable(fmt.Sprintf("qwen35: %s: tensor %s: %s", e.File, e.Tensor, e.Reason)) // names come from the file
}

// Unwrap returns the sentinel that classifies the error.
func (e *WeightError) Unwrap() error { return e.Err }

// Load reads a model from dir: config.json (HF layout) and its weights, in
// model.safetensors, in shards listed by model.safetensors.index.json or in every
// model*.safetensors (checkpoint.OpenCheckpoint: memory-mapped). Modules stored with MLX's
// affine quantization (<module>.scales present, config's quantization block) load as
// quantized layers and stay packed on the device. Tensors
// may use HF runtime names (fused experts), save_pretrained's per-expert names, the
// model.language_model. prefix of published checkpoints (mtp.* and model.visual.* are
// ignored) or mlx-lm's sanitized layout (detected by the files' format "mlx", switch_mlp tensors or a [C, K, 1]
// conv1d; its norms already hold 1 + w). Weights keep their stored dtype (float32, float16
// or bfloat16) on g; see the package doc for the dtype each op computes in.
func Load(dir string, g *graph.Graph, opt Options) (*Model, error) {
	path := filepath.Join(dir, "config.json")
	cfg, err := LoadConfig(path)
	if err != nil {
		return nil, err
	}
	ck, err := checkpoint.OpenCheckpoint(dir)
	if err != nil {
		return nil, fmt.Errorf("qwen35: %w", err)
	}
	// Every tensor is copied into a device buffer by build, so the files (mappings) are
	// released when it returns.
	defer ck.Close()
	return loadFrom(cfg, ck, g, opt)
}

// LoadCheckpoint is Load from a checkpoint already open: its config.json (ck.Config)
// and headers are not read again. ck stays open; the caller closes it.
func LoadCheckpoint(ck *checkpoint.Checkpoint, g *graph.Graph, opt Options) (*Model, error) {
	cfg, err := ParseHFConfig(ck.Config)
	if err != nil {
		return nil, fmt.Errorf("qwen35: load config %s: %w", filepath.Join(ck.Dir, "config.json"), err)
	}
	return loadFrom(cfg, ck, g, opt)
}

// loadFrom builds the model from cfg (config.json read with HF's rules) and ck.
func loadFrom(cfg *Config, ck *checkpoint.Checkpoint, g *graph.Graph, opt Options) (*Model, error) {
	path := filepath.Join(ck.Dir, "config.json")
	src := newFileSource(ck)
	if src.writtenByMLX {
		// Read as mlx-lm reads it: its defaults for absent keys (rope_theta 100000,
		// head_dim from hidden_size, the interval layer rule).
		var err error
		if cfg, err = ParseModelArgs(ck.Config); err != nil {
			return nil, fmt.Errorf("qwen35: load config %s: %w", path, err)
		}
	}
	return build(cfg, g, src, opt)
}

// fileSource maps the model's parameter names onto one checkpoint's naming scheme.
type fileSource struct {
	st   *checkpoint.Checkpoint
	body string // what "model." becomes: "model.", "model.language_model." or "language_model.model."
	head string // the lm_head tensor's name
	mlx  bool   // mlx-lm's layout (files it wrote, switch_mlp experts or a [C, K, 1] conv): norms already 1 + w
	// writtenByMLX: the files say format "mlx" (mlx-lm's save_model), so mlx-lm's model
	// rules apply, not only its layout.
	writtenByMLX bool
}

func newFileSource(st *checkpoint.Checkpoint) *fileSource {
	s := &fileSource{st: st, body: "model.", head: "lm_head.weight", writtenByMLX: st.Format() == "mlx"}
	// Quantized modules say nothing of the layout: checkpoint.QuantizeCheckpoint quantizes a
	// Hugging Face layout as it stands (zero-centred norms), so .scales is no evidence.
	s.mlx = s.writtenByMLX
	for _, p := range []string{"model.language_model.", "language_model.model.", "model."} {
		if s.has(p + "embed_tokens.weight") {
			s.body = p
			break
		}
	}
	for _, h := range []string{"lm_head.weight", "language_model.lm_head.weight"} {
		if s.has(h) {
			s.head = h
			break
		}
	}
	for _, n := range st.Names() {
		if strings.Contains(n, ".switch_mlp.") {
			s.mlx = true
		}
		if strings.HasSuffix(n, "linear_attn.conv1d.weight") {
			if t, _, _ := st.Info(n); len(t.Shape) == 3 && t.Shape[1] > 1 && t.Shape[2] == 1 {
				s.mlx = true
			}
		}
	}
	return s
}

func (s *fileSource) mlxLM() bool { return s.writtenByMLX }

func (s *fileSource) has(name string) bool {
	_, _, ok := s.st.Info(name)
	return ok
}

// file names the file holding name; for a missing tensor, the only weight file, or
// the checkpoint directory when there are shards.
func (s *fileSource) file(name string) string {
	if _, f, ok := s.st.Info(name); ok {
		return f
	}
	if files := s.st.Files(); len(files) == 1 {
		return files[0]
	}
	return s.st.Dir
}

// quantized loads module (a model name) if the checkpoint stores it quantized, and
// checks that its float shape is the one the config implies. Stacked experts are
// quantized only in mlx-lm's switch_mlp layout.
func (s *fileSource) quantized(g *graph.Graph, module string, shape []int) (nn.QuantizedWeight, bool, error) {
	name := strings.TrimSuffix(s.fileName(module+".weight"), ".weight")
	if i := strings.LastIndex(module, ".experts."); i >= 0 {
		name = s.fileName(module[:i+1]) + "switch_mlp." + module[i+len(".experts."):]
	}
	if !s.st.Quantized(name) {
		return nn.QuantizedWeight{}, false, nil
	}
	q, err := nn.LoadQuantizedWeight(g, s.st, name)
	if err != nil {
		return q, false, fmt.Errorf("qwen35: %w", err)
	}
	if got := q.Shape(); !slices.Equal(got, shape) {
		return q, false, s.fail(name+".weight", ErrShape, "quantized matrix %v, want %v", got, shape)
	}
	return q, true, nil
}

// fileName maps a model name ("model.…" or "lm_head.weight") to the checkpoint's.
func (s *fileSource) fileName(name string) string {
	if name == "lm_head.weight" {
		return s.head
	}
	return s.body + strings.TrimPrefix(name, "model.")
}

func (s *fileSource) load(p param) (nn.Host, error) {
	if p.kind == kindExperts {
		return s.experts(p)
	}
	name := s.fileName(p.name)
	var h nn.Host
	var err error
	if p.kind == kindConv {
		// [C, 1, K] and [C, K, 1] hold the same values in the same order as [C, K].
		c, k := p.shape[0], p.shape[1]
		h, err = s.read(name, []int{c, 1, k}, []int{c, k, 1})
	} else {
		h, err = s.read(name, p.shape)
	}
	if err != nil {
		return nn.Host{}, err
	}
	h.Shape = p.shape
	if p.kind == kindNorm && !s.mlx {
		h = h.Map(func(w float64) float64 { return 1 + w })
	}
	return h, nil
}

// check returns a tensor's info after checking it exists, has one of the shapes and a
// float dtype; nothing is read.
func (s *fileSource) check(name string, shapes ...[]int) (checkpoint.TensorInfo, tensor.DType, error) {
	t, _, ok := s.st.Info(name)
	if !ok {
		return t, 0, s.fail(name, checkpoint.ErrTensorNotFound, "not found")
	}
	if !slices.ContainsFunc(shapes, func(sh []int) bool { return slices.Equal(sh, t.Shape) }) {
		want := fmt.Sprint(shapes[0])
		for _, sh := range shapes[1:] {
			want += fmt.Sprintf(" or %v", sh)
		}
		return t, 0, s.fail(name, ErrShape, "shape %v, want %s", t.Shape, want)
	}
	dt, ok := checkpoint.EngineDType(t.DType)
	if !ok {
		return t, 0, s.fail(name, checkpoint.ErrDTypeMismatch, "unsupported dtype %s (want F32, F16 or BF16)", t.DType)
	}
	return t, dt, nil
}

// read returns a checked tensor's bytes in its stored dtype (a copy: the file's bytes
// are never modified).
func (s *fileSource) read(name string, shapes ...[]int) (nn.Host, error) {
	t, dt, err := s.check(name, shapes...)
	if err != nil {
		return nn.Host{}, err
	}
	b, err := s.st.AppendBytes(nil, name) // a guarded copy (see checkpoint.CatchFault)
	if err != nil {
		return nn.Host{}, fmt.Errorf("qwen35: %w", err)
	}
	return nn.Host{DType: dt, Shape: t.Shape, Data: b}, nil
}

func (s *fileSource) fail(name string, err error, format string, args ...any) error {
	return &WeightError{File: s.file(name), Tensor: name, Reason: fmt.Sprintf(format, args...), Err: err}
}

// experts returns one stacked expert projection from whichever layout the file uses:
// mlx-lm's switch_mlp.<proj>.weight [E, out, in]; HF's fused experts.gate_up_proj
// [E, 2I, H] (gate rows first) and experts.down_proj [E, H, I]; or save_pretrained's
// experts.<e>.<proj>.weight [out, in]. Every tensor's shape and dtype is checked
// against the file before the stack is allocated, so the allocation is bounded by
// what the file holds.
func (s *fileSource) experts(p param) (nn.Host, error) {
	i := strings.LastIndex(p.name, ".experts.")
	mlp, proj := s.fileName(p.name[:i+1]), p.name[i+len(".experts."):]
	e, out, in := p.shape[0], p.shape[1], p.shape[2]
	if n := mlp + "switch_mlp." + proj + ".weight"; s.has(n) {
		return s.read(n, p.shape)
	}
	fused := mlp + "experts.down_proj"
	if proj != "down_proj" {
		fused = mlp + "experts.gate_up_proj"
	}
	if s.has(fused) {
		if proj == "down_proj" {
			return s.read(fused, p.shape)
		}
		v, err := s.read(fused, []int{e, 2 * out, in})
		if err != nil {
			return nn.Host{}, err
		}
		// Expert x's gate rows come first, then its up rows.
		sz := out * in * v.DType.Size()
		half := 0
		if proj == "up_proj" {
			half = sz
		}
		res := make([]byte, 0, e*sz)
		for x := 0; x < e; x++ {
			base := x*2*sz + half
			res = append(res, v.Data[base:base+sz]...)
		}
		return nn.Host{DType: v.DType, Shape: p.shape, Data: res}, nil
	}
	if !s.has(fmt.Sprintf("%sexperts.0.%s.weight", mlp, proj)) {
		return nn.Host{}, s.fail(fused, checkpoint.ErrTensorNotFound, "not found (nor %sswitch_mlp.%s.weight, %sexperts.0.%s.weight)", mlp, proj, mlp, proj)
	}
	names := make([]string, e)
	var dt tensor.DType
	for x := range names {
		names[x] = fmt.Sprintf("%sexperts.%d.%s.weight", mlp, x, proj)
		_, d, err := s.check(names[x], []int{out, in})
		if err != nil {
			return nn.Host{}, err
		}
		if x > 0 && d != dt {
			return nn.Host{}, s.fail(names[x], checkpoint.ErrDTypeMismatch, "dtype %s differs from expert 0's %s", d, dt)
		}
		dt = d
	}
	res := make([]byte, 0, e*out*in*dt.Size())
	for _, n := range names {
		var err error
		if res, err = s.st.AppendBytes(res, n); err != nil { // guarded (see checkpoint.CatchFault)
			return nn.Host{}, fmt.Errorf("qwen35: %w", err)
		}
	}
	return nn.Host{DType: dt, Shape: p.shape, Data: res}, nil
}
