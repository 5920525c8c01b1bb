package qwen35

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

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
// [C, K], experts stacked).
type source interface {
	load(p param) ([]float32, error)
}

// builder draws parameters from a source and keeps the first error.
type builder struct {
	g   *graph.Graph
	src source
	err error
}

func (b *builder) floats(name string, kind paramKind, shape ...int) []float32 {
	if b.err != nil {
		return nil
	}
	v, err := b.src.load(param{name: name, kind: kind, shape: shape})
	if err != nil {
		b.err = err
		return nil
	}
	return v
}

func (b *builder) fromFloat32(v []float32, shape ...int) tensor.Array {
	if v == nil {
		return tensor.Array{}
	}
	return tensor.FromFloat32(b.g, v, shape...)
}

func (b *builder) array(name string, kind paramKind, shape ...int) tensor.Array {
	return b.fromFloat32(b.floats(name, kind, shape...), shape...)
}

// linear loads p.weight [out, in] and, with bias, p.bias [out]. Every linear layer of
// the model is made here, so this is the one place that decides a layer's type from
// the tensors the checkpoint holds.
func (b *builder) linear(p string, out, in int, bias bool) nn.LinearLayer {
	l := &nn.Linear{Weight: b.array(p+".weight", kindWeight, out, in)}
	if bias {
		l.Bias = b.array(p+".bias", kindBias, out)
	}
	return l
}

// embedding loads the [vocab, dim] table name.
func (b *builder) embedding(name string, vocab, dim int) nn.EmbeddingLayer {
	return &nn.Embedding{Weight: b.array(name, kindEmbed, vocab, dim)}
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
// unsupported dtype. Err is nn.ErrTensorNotFound, ErrShape or nn.ErrDTypeMismatch.
type WeightError struct {
	File   string
	Tensor string
	Reason string
	Err    error
}

// Error formats the error as "qwen35: <file>: tensor <name>: <reason>".
func (e *WeightError) Error() string {
	return fmt.Sprintf("qwen35: %s: tensor %s: %s", e.File, e.Tensor, e.Reason)
}

// Unwrap returns the sentinel that classifies the error.
func (e *WeightError) Unwrap() error { return e.Err }

// Load reads a model from dir: config.json (HF layout) and model.safetensors. Tensors
// may use HF runtime names (fused experts), save_pretrained's per-expert names, the
// model.language_model. prefix of published checkpoints (mtp.* and model.visual.* are
// ignored) or mlx-lm's sanitized layout (detected by switch_mlp tensors or a [C, K, 1]
// conv1d; its norms already hold 1 + w). Weights become float32 arrays on g.
func Load(dir string, g *graph.Graph, opt Options) (*Model, error) {
	cfg, err := LoadConfig(filepath.Join(dir, "config.json"))
	if err != nil {
		return nil, err
	}
	st, err := nn.ReadSafetensors(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		return nil, fmt.Errorf("qwen35: %w", err)
	}
	return build(cfg, g, newFileSource(st, cfg), opt)
}

// fileSource maps the model's parameter names onto one checkpoint's naming scheme.
type fileSource struct {
	st   *nn.Safetensors
	body string // what "model." becomes: "model.", "model.language_model." or "language_model.model."
	head string // the lm_head tensor's name
	mlx  bool   // mlx-lm layout: norms already 1 + w
}

func newFileSource(st *nn.Safetensors, cfg *Config) *fileSource {
	s := &fileSource{st: st, body: "model.", head: "lm_head.weight"}
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
			if t, _ := st.Info(n); len(t.Shape) == 3 && t.Shape[1] > 1 && t.Shape[2] == 1 {
				s.mlx = true
			}
		}
	}
	return s
}

func (s *fileSource) has(name string) bool {
	_, ok := s.st.Info(name)
	return ok
}

// fileName maps a model name ("model.…" or "lm_head.weight") to the checkpoint's.
func (s *fileSource) fileName(name string) string {
	if name == "lm_head.weight" {
		return s.head
	}
	return s.body + strings.TrimPrefix(name, "model.")
}

func (s *fileSource) load(p param) ([]float32, error) {
	if p.kind == kindExperts {
		return s.experts(p)
	}
	name := s.fileName(p.name)
	var v []float32
	var err error
	if p.kind == kindConv {
		// [C, 1, K] and [C, K, 1] hold the same values in the same order as [C, K].
		c, k := p.shape[0], p.shape[1]
		v, err = s.read(name, []int{c, 1, k}, []int{c, k, 1})
	} else {
		v, err = s.read(name, p.shape)
	}
	if err != nil {
		return nil, err
	}
	if p.kind == kindNorm && !s.mlx {
		for i := range v {
			v[i]++
		}
	}
	return v, nil
}

// read returns a tensor after checking it exists, has one of the shapes and a float
// dtype.
func (s *fileSource) read(name string, shapes ...[]int) ([]float32, error) {
	t, ok := s.st.Info(name)
	if !ok {
		return nil, s.fail(name, nn.ErrTensorNotFound, "not found")
	}
	if !slices.ContainsFunc(shapes, func(sh []int) bool { return slices.Equal(sh, t.Shape) }) {
		want := fmt.Sprint(shapes[0])
		for _, sh := range shapes[1:] {
			want += fmt.Sprintf(" or %v", sh)
		}
		return nil, s.fail(name, ErrShape, "shape %v, want %s", t.Shape, want)
	}
	switch t.DType {
	case nn.F32, nn.F16, nn.BF16:
	default:
		return nil, s.fail(name, nn.ErrDTypeMismatch, "unsupported dtype %s (want F32, F16 or BF16)", t.DType)
	}
	v, _, err := s.st.Float32(name)
	if err != nil {
		return nil, fmt.Errorf("qwen35: %w", err)
	}
	return v, nil
}

func (s *fileSource) fail(name string, err error, format string, args ...any) error {
	return &WeightError{File: s.st.File(), Tensor: name, Reason: fmt.Sprintf(format, args...), Err: err}
}

// experts returns one stacked expert projection from whichever layout the file uses:
// mlx-lm's switch_mlp.<proj>.weight [E, out, in]; HF's fused experts.gate_up_proj
// [E, 2I, H] (gate rows first) and experts.down_proj [E, H, I]; or save_pretrained's
// experts.<e>.<proj>.weight [out, in].
func (s *fileSource) experts(p param) ([]float32, error) {
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
			return nil, err
		}
		half := 0
		if proj == "up_proj" {
			half = out * in
		}
		res := make([]float32, 0, e*out*in)
		for x := 0; x < e; x++ {
			base := x*2*out*in + half
			res = append(res, v[base:base+out*in]...)
		}
		return res, nil
	}
	if !s.has(fmt.Sprintf("%sexperts.0.%s.weight", mlp, proj)) {
		return nil, s.fail(fused, nn.ErrTensorNotFound, "not found (nor %sswitch_mlp.%s.weight, %sexperts.0.%s.weight)", mlp, proj, mlp, proj)
	}
	res := make([]float32, 0, e*out*in)
	for x := 0; x < e; x++ {
		v, err := s.read(fmt.Sprintf("%sexperts.%d.%s.weight", mlp, x, proj), []int{out, in})
		if err != nil {
			return nil, err
		}
		res = append(res, v...)
	}
	return res, nil
}
