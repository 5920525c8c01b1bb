package qwen35

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ingotml/ingot/kernels"
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
	quantized(g *graph.Graph, module string, shape []int) (w tensor.QuantizedWeight, ok bool, err error)
	// stored checks p exactly as load would and says how it is stored, reading no
	// tensor data (the zero Stored for a random model).
	stored(p param) (nn.Stored, error)
	// storedQuantized is quantized's check, reading no tensor data: ok false when the
	// module is stored in float.
	storedQuantized(module string, shape []int) (st nn.Stored, ok bool, err error)
	// mlxLM reports a checkpoint written by mlx-lm, whose model rules apply.
	mlxLM() bool
}

// builder draws parameters from a source and keeps the first error. It is the one
// place where layers are made from parameters, so a layer type chosen by what the
// checkpoint holds (e.g. a quantized linear) plugs in here. A dry builder (desc set)
// makes nothing: it records each parameter build asks for, with how the source stores
// it, into desc. That record is the model's nn.Description, so the description and
// the build cannot disagree.
type builder struct {
	g    *graph.Graph
	src  source
	err  error
	desc *nn.Description // non-nil: a dry run recording parameters
}

// record adds one parameter to a dry run's description.
func (b *builder) record(name string, kind paramKind, shape []int, st nn.Stored) {
	q := kind == kindWeight || kind == kindEmbed || kind == kindExperts
	b.desc.Params = append(b.desc.Params, nn.Param{Name: name, Shape: slices.Clone(shape), Quantizable: q, Stored: st})
}

// host loads one parameter (nothing after the first error; ok false in a dry run).
func (b *builder) host(name string, kind paramKind, shape ...int) (nn.Host, bool) {
	if b.err != nil {
		return nn.Host{}, false
	}
	p := param{name: name, kind: kind, shape: shape}
	if b.desc != nil {
		st, err := b.src.stored(p)
		if err != nil {
			b.err = err
		} else {
			b.record(name, kind, shape, st)
		}
		return nn.Host{}, false
	}
	h, err := b.src.load(p)
	if err != nil {
		b.err = err
		return nn.Host{}, false
	}
	return h, true
}

// array loads one parameter onto the device in its stored dtype (invalid in a dry run).
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
// after the first error). A dry run records it and returns a zero weight.
func (b *builder) quantized(module string, shape ...int) (tensor.QuantizedWeight, bool) {
	if b.err != nil {
		return tensor.QuantizedWeight{}, false
	}
	if b.desc != nil {
		st, ok, err := b.src.storedQuantized(module, shape)
		if err != nil {
			b.err = err
		} else if ok {
			kind := kindWeight
			if strings.Contains(module, ".experts.") {
				kind = kindExperts
			}
			b.record(module+".weight", kind, shape, st)
		}
		return tensor.QuantizedWeight{}, ok
	}
	q, ok, err := b.src.quantized(b.g, module, shape)
	if err != nil {
		b.err = err
		return tensor.QuantizedWeight{}, false
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

// LoadCheckpoint builds the model of an open checkpoint (nn/models' Load and
// LoadCheckpoint are the way in): its config.json (ck.Config, HF layout) and headers
// are not read again. Modules stored with MLX's affine quantization (<module>.scales
// present, config's quantization block) load as quantized layers and stay packed on
// the device. Tensors may use HF runtime names (fused experts), save_pretrained's
// per-expert names, the model.language_model. prefix of published checkpoints (mtp.*
// and model.visual.* are ignored) or mlx-lm's sanitized layout (detected by the files'
// format "mlx", switch_mlp tensors or a [C, K, 1] conv1d; its norms already hold
// 1 + w). Weights keep their stored dtype (float32, float16 or bfloat16) on g; see the
// package doc for the dtype each op computes in. ck stays open; the caller closes it.
func LoadCheckpoint(ck *checkpoint.Checkpoint, g *graph.Graph, opt nn.Options) (*Model, error) {
	cfg, src, err := open(ck)
	if err != nil {
		return nil, err
	}
	return build(cfg, g, src, opt)
}

// open reads ck's config and makes its source, as LoadCheckpoint and Inspect both do:
// a checkpoint mlx-lm wrote is read with mlx-lm's defaults for absent keys (rope_theta
// 100000, head_dim from hidden_size, the interval layer rule).
func open(ck *checkpoint.Checkpoint) (*Config, *fileSource, error) {
	path := filepath.Join(ck.Dir, "config.json")
	parse := ParseHFConfig
	src := newFileSource(ck)
	if src.writtenByMLX {
		parse = ParseModelArgs
	}
	cfg, err := parse(ck.Config)
	if err != nil {
		return nil, nil, fmt.Errorf("qwen35: load config %s: %w", path, err)
	}
	return cfg, src, nil
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

// quantizedName maps a module (a model name) to the checkpoint's. Stacked experts
// are quantized only in mlx-lm's switch_mlp layout.
func (s *fileSource) quantizedName(module string) string {
	if i := strings.LastIndex(module, ".experts."); i >= 0 {
		return s.fileName(module[:i+1]) + "switch_mlp." + module[i+len(".experts."):]
	}
	return strings.TrimSuffix(s.fileName(module+".weight"), ".weight")
}

// storedQuantized checks module's quantized tensors against config.json and the float
// shape the config implies, from the headers alone.
func (s *fileSource) storedQuantized(module string, shape []int) (nn.Stored, bool, error) {
	name := s.quantizedName(module)
	if !s.st.Quantized(name) {
		return nn.Stored{}, false, nil
	}
	spec, err := s.st.QuantSpecOf(name)
	if err != nil {
		return nn.Stored{}, false, fmt.Errorf("qwen35: %w", err)
	}
	st := nn.Stored{DType: string(checkpoint.U32), Bits: spec.Bits, Group: spec.GroupSize, Quantized: true}
	var w checkpoint.TensorInfo
	for i, suffix := range []string{".weight", ".scales", ".biases"} {
		t, _, _ := s.st.Info(name + suffix)
		if i == 0 {
			w = t
		}
		st.Tensors = append(st.Tensors, name+suffix)
		st.Bytes += t.End - t.Begin
	}
	cols, _ := kernels.QuantCols(w.Shape[len(w.Shape)-1], spec.Bits, spec.GroupSize)
	got := append(slices.Clone(w.Shape[:len(w.Shape)-1]), cols)
	if !slices.Equal(got, shape) {
		return nn.Stored{}, false, s.fail(name+".weight", nn.ErrShape, "quantized matrix %v, want %v", got, shape)
	}
	return st, true, nil
}

// quantized loads module if the checkpoint stores it quantized, after storedQuantized's
// checks.
func (s *fileSource) quantized(g *graph.Graph, module string, shape []int) (tensor.QuantizedWeight, bool, error) {
	if _, ok, err := s.storedQuantized(module, shape); !ok || err != nil {
		return tensor.QuantizedWeight{}, false, err
	}
	q, err := nn.LoadQuantizedWeight(g, s.st, s.quantizedName(module))
	if err != nil {
		return q, false, fmt.Errorf("qwen35: %w", err)
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

// shapes returns p's checkpoint name and the stored shapes it may have.
func (s *fileSource) shapes(p param) (string, [][]int) {
	if p.kind == kindConv {
		// [C, 1, K] and [C, K, 1] hold the same values in the same order as [C, K].
		c, k := p.shape[0], p.shape[1]
		return s.fileName(p.name), [][]int{{c, 1, k}, {c, k, 1}}
	}
	return s.fileName(p.name), [][]int{p.shape}
}

// stored checks p's tensors exactly as load does, from the headers alone.
func (s *fileSource) stored(p param) (nn.Stored, error) {
	var plan expertPlan
	if p.kind == kindExperts {
		var err error
		if plan, err = s.planExperts(p); err != nil {
			return nn.Stored{}, err
		}
	} else {
		name, shapes := s.shapes(p)
		t, _, err := s.check(name, shapes...)
		if err != nil {
			return nn.Stored{}, err
		}
		plan = expertPlan{names: []string{name}, infos: []checkpoint.TensorInfo{t}, half: -1}
	}
	st := nn.Stored{Tensors: plan.names, DType: string(plan.infos[0].DType)}
	for _, t := range plan.infos {
		st.Bytes += t.End - t.Begin
	}
	if plan.half >= 0 {
		st.Bytes /= 2 // one half of a fused gate_up bank
	}
	return st, nil
}

func (s *fileSource) load(p param) (nn.Host, error) {
	if p.kind == kindExperts {
		return s.experts(p)
	}
	name, shapes := s.shapes(p)
	h, err := s.read(name, shapes...)
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
		return t, 0, s.fail(name, nn.ErrShape, "shape %v, want %s", t.Shape, want)
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
	b, _, release, err := s.st.Mapped(name)
	if err != nil {
		return nn.Host{}, fmt.Errorf("qwen35: %w", err)
	}
	return nn.Host{DType: dt, Shape: t.Shape, Data: b, Release: release}, nil
}

func (s *fileSource) fail(name string, err error, format string, args ...any) error {
	return &nn.WeightError{Model: "qwen35", File: s.file(name), Tensor: name, Reason: fmt.Sprintf(format, args...), Err: err}
}

// expertPlan is where one stacked expert projection lives: names and infos of the
// tensors read (checked), and for HF's fused gate_up bank which half (0 gate, 1 up;
// -1 for every other layout).
type expertPlan struct {
	names []string
	infos []checkpoint.TensorInfo
	dt    tensor.DType
	half  int
}

// planExperts finds one stacked expert projection in whichever layout the file uses:
// mlx-lm's switch_mlp.<proj>.weight [E, out, in]; HF's fused experts.gate_up_proj
// [E, 2I, H] (gate rows first) and experts.down_proj [E, H, I]; or save_pretrained's
// experts.<e>.<proj>.weight [out, in]. Every tensor's shape and dtype is checked, so a
// later allocation is bounded by what the file holds.
func (s *fileSource) planExperts(p param) (expertPlan, error) {
	i := strings.LastIndex(p.name, ".experts.")
	mlp, proj := s.fileName(p.name[:i+1]), p.name[i+len(".experts."):]
	e, out, in := p.shape[0], p.shape[1], p.shape[2]
	one := func(name string, half int, shape []int) (expertPlan, error) {
		t, dt, err := s.check(name, shape)
		return expertPlan{names: []string{name}, infos: []checkpoint.TensorInfo{t}, dt: dt, half: half}, err
	}
	if n := mlp + "switch_mlp." + proj + ".weight"; s.has(n) {
		return one(n, -1, p.shape)
	}
	fused := mlp + "experts.down_proj"
	if proj != "down_proj" {
		fused = mlp + "experts.gate_up_proj"
	}
	switch {
	case s.has(fused) && proj == "down_proj":
		return one(fused, -1, p.shape)
	case s.has(fused) && proj == "up_proj":
		return one(fused, 1, []int{e, 2 * out, in})
	case s.has(fused):
		return one(fused, 0, []int{e, 2 * out, in})
	}
	if !s.has(fmt.Sprintf("%sexperts.0.%s.weight", mlp, proj)) {
		return expertPlan{}, s.fail(fused, checkpoint.ErrTensorNotFound, "not found (nor %sswitch_mlp.%s.weight, %sexperts.0.%s.weight)", mlp, proj, mlp, proj)
	}
	plan := expertPlan{half: -1}
	for x := range e {
		name := fmt.Sprintf("%sexperts.%d.%s.weight", mlp, x, proj)
		t, d, err := s.check(name, []int{out, in})
		if err != nil {
			return expertPlan{}, err
		}
		if x > 0 && d != plan.dt {
			return expertPlan{}, s.fail(name, checkpoint.ErrDTypeMismatch, "dtype %s differs from expert 0's %s", d, plan.dt)
		}
		plan.dt = d
		plan.names = append(plan.names, name)
		plan.infos = append(plan.infos, t)
	}
	return plan, nil
}

// experts reads one stacked expert projection as planExperts found it.
func (s *fileSource) experts(p param) (nn.Host, error) {
	plan, err := s.planExperts(p)
	if err != nil {
		return nn.Host{}, err
	}
	if len(plan.names) == 1 && plan.half < 0 {
		h, err := s.read(plan.names[0], p.shape) // one stacked bank: in place
		h.Shape = p.shape
		return h, err
	}
	res := make([]byte, 0, p.shape[0]*p.shape[1]*p.shape[2]*plan.dt.Size())
	for _, n := range plan.names {
		if plan.half < 0 {
			if res, err = s.st.AppendBytes(res, n); err != nil { // a guarded copy (checkpoint.CatchFault)
				return nn.Host{}, fmt.Errorf("qwen35: %w", err)
			}
			continue
		}
		b, err := s.st.AppendBytes(nil, n)
		if err != nil {
			return nn.Host{}, fmt.Errorf("qwen35: %w", err)
		}
		// Expert x's gate rows come first, then its up rows.
		sz := p.shape[1] * p.shape[2] * plan.dt.Size()
		for x := range p.shape[0] {
			base := x*2*sz + plan.half*sz
			res = append(res, b[base:base+sz]...)
		}
	}
	return nn.Host{DType: plan.dt, Shape: p.shape, Data: res}, nil
}
