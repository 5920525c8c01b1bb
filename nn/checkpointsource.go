package nn

import (
	"fmt"
	"slices"
	"strings"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/kernels"
	"github.com/ingotml/ingot/nn/checkpoint"
	"github.com/ingotml/ingot/tensor"
)

// CheckpointSource reads a model's parameters from an open checkpoint: Hugging Face's
// names (or a family's renaming of them), with the layouts a Kind may have on disk
// (conv1d as [C, 1, K] or [C, K, 1]; experts as mlx-lm's switch_mlp stacks, HF's fused
// gate_up_proj or save_pretrained's per-expert tensors; zero-centred norms as w or,
// after mlx-lm's sanitize, 1 + w). Modules stored with MLX's affine quantization
// (<module>.scales present, config's quantization block) load packed.
type CheckpointSource struct {
	// Family names the model family in errors.
	Family string
	// Checkpoint is the open checkpoint; the caller closes it.
	Checkpoint *checkpoint.Checkpoint
	// Rename maps a model name ("model.…", "lm_head.weight", or a prefix of either) to
	// the checkpoint's; nil keeps the names.
	Rename func(name string) string
	// CentredPlusOne: the zero-centred norms hold 1 + w (mlx-lm's layout), not w.
	CentredPlusOne bool
}

// Fail returns the WeightError for tensor name, naming the file that holds it: for a
// missing tensor, the only weight file, or the checkpoint directory when it has shards.
func (s *CheckpointSource) Fail(name string, err error, format string, args ...any) error {
	file := s.Checkpoint.Dir
	if _, f, ok := s.Checkpoint.Info(name); ok {
		file = f
	} else if files := s.Checkpoint.Files(); len(files) == 1 {
		file = files[0]
	}
	return &WeightError{Model: s.Family, File: file, Tensor: name, Reason: fmt.Sprintf(format, args...), Err: err}
}

func (s *CheckpointSource) has(name string) bool {
	_, _, ok := s.Checkpoint.Info(name)
	return ok
}

// name maps a model name to the checkpoint's.
func (s *CheckpointSource) name(n string) string {
	if s.Rename == nil {
		return n
	}
	return s.Rename(n)
}

// quantizedName maps a module (a model name) to the checkpoint's. Stacked experts are
// quantized only in mlx-lm's switch_mlp layout.
func (s *CheckpointSource) quantizedName(module string) string {
	if mlp, proj, ok := splitExperts(module); ok {
		return s.name(mlp) + "switch_mlp." + proj
	}
	return strings.TrimSuffix(s.name(module+".weight"), ".weight")
}

// StoredQuantized checks module's quantized tensors against config.json and the float
// shape the config implies, from the headers alone.
func (s *CheckpointSource) StoredQuantized(module string, shape []int) (Stored, bool, error) {
	name := s.quantizedName(module)
	if !s.Checkpoint.Quantized(name) {
		return Stored{}, false, nil
	}
	spec, err := s.Checkpoint.QuantSpecOf(name)
	if err != nil {
		return Stored{}, false, fmt.Errorf("%s: %w", s.Family, err)
	}
	st := Stored{DType: string(checkpoint.U32), Bits: spec.Bits, Group: spec.GroupSize, Quantized: true}
	var w checkpoint.TensorInfo
	for i, suffix := range []string{".weight", ".scales", ".biases"} {
		t, _, _ := s.Checkpoint.Info(name + suffix)
		if i == 0 {
			w = t
		}
		st.Tensors = append(st.Tensors, name+suffix)
		st.Bytes += t.End - t.Begin
	}
	cols, _ := kernels.QuantCols(w.Shape[len(w.Shape)-1], spec.Bits, spec.GroupSize)
	got := append(slices.Clone(w.Shape[:len(w.Shape)-1]), cols)
	if !slices.Equal(got, shape) {
		return Stored{}, false, s.Fail(name+".weight", ErrShape, "quantized matrix %v, want %v", got, shape)
	}
	return st, true, nil
}

// Quantized loads module if the checkpoint stores it quantized, after
// StoredQuantized's checks.
func (s *CheckpointSource) Quantized(g *graph.Graph, module string, shape []int) (tensor.QuantizedWeight, bool, error) {
	if _, ok, err := s.StoredQuantized(module, shape); !ok || err != nil {
		return tensor.QuantizedWeight{}, false, err
	}
	q, err := LoadQuantizedWeight(g, s.Checkpoint, s.quantizedName(module))
	if err != nil {
		return q, false, fmt.Errorf("%s: %w", s.Family, err)
	}
	return q, true, nil
}

// shapes returns p's checkpoint name and the stored shapes it may have.
func (s *CheckpointSource) shapes(p Spec) (string, [][]int) {
	if p.Kind == KindConv {
		// [C, 1, K] and [C, K, 1] hold the same values in the same order as [C, K].
		c, k := p.Shape[0], p.Shape[1]
		return s.name(p.Name), [][]int{{c, 1, k}, {c, k, 1}}
	}
	return s.name(p.Name), [][]int{p.Shape}
}

// Stored checks p's tensors exactly as Load does, from the headers alone.
func (s *CheckpointSource) Stored(p Spec) (Stored, error) {
	var plan expertPlan
	if p.Kind == KindExperts {
		var err error
		if plan, err = s.planExperts(p); err != nil {
			return Stored{}, err
		}
	} else {
		name, shapes := s.shapes(p)
		t, _, err := s.check(name, shapes...)
		if err != nil {
			return Stored{}, err
		}
		plan = expertPlan{names: []string{name}, infos: []checkpoint.TensorInfo{t}, half: -1}
	}
	st := Stored{Tensors: plan.names, DType: string(plan.infos[0].DType)}
	for _, t := range plan.infos {
		st.Bytes += t.End - t.Begin
	}
	if plan.half >= 0 {
		st.Bytes /= 2 // one half of a fused gate_up bank
	}
	return st, nil
}

// Load returns p's values: the file's mapped bytes in place where the layout allows.
func (s *CheckpointSource) Load(p Spec) (Host, error) {
	if p.Kind == KindExperts {
		return s.experts(p)
	}
	name, shapes := s.shapes(p)
	h, err := s.read(name, shapes...)
	if err != nil {
		return Host{}, err
	}
	h.Shape = p.Shape
	if p.Kind == KindCentredNorm && !s.CentredPlusOne {
		h = h.Map(func(w float64) float64 { return 1 + w })
	}
	return h, nil
}

// check returns a tensor's info after checking it exists, has one of the shapes and a
// float dtype; nothing is read.
func (s *CheckpointSource) check(name string, shapes ...[]int) (checkpoint.TensorInfo, tensor.DType, error) {
	t, _, ok := s.Checkpoint.Info(name)
	if !ok {
		return t, 0, s.Fail(name, checkpoint.ErrTensorNotFound, "not found")
	}
	if !slices.ContainsFunc(shapes, func(sh []int) bool { return slices.Equal(sh, t.Shape) }) {
		want := fmt.Sprint(shapes[0])
		for _, sh := range shapes[1:] {
			want += fmt.Sprintf(" or %v", sh)
		}
		return t, 0, s.Fail(name, ErrShape, "shape %v, want %s", t.Shape, want)
	}
	dt, ok := checkpoint.EngineDType(t.DType)
	if !ok {
		return t, 0, s.Fail(name, checkpoint.ErrDTypeMismatch, "unsupported dtype %s (want F32, F16 or BF16)", t.DType)
	}
	return t, dt, nil
}

// read returns a checked tensor's mapped bytes in its stored dtype, pinned (the
// file's bytes are never modified).
func (s *CheckpointSource) read(name string, shapes ...[]int) (Host, error) {
	t, dt, err := s.check(name, shapes...)
	if err != nil {
		return Host{}, err
	}
	b, _, release, err := s.Checkpoint.Mapped(name)
	if err != nil {
		return Host{}, fmt.Errorf("%s: %w", s.Family, err)
	}
	return Host{DType: dt, Shape: t.Shape, Data: b, Release: release, Tensor: name}, nil
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
func (s *CheckpointSource) planExperts(p Spec) (expertPlan, error) {
	mlp, proj, _ := splitExperts(p.Name)
	mlp = s.name(mlp)
	e, out, in := p.Shape[0], p.Shape[1], p.Shape[2]
	one := func(name string, half int, shape []int) (expertPlan, error) {
		t, dt, err := s.check(name, shape)
		return expertPlan{names: []string{name}, infos: []checkpoint.TensorInfo{t}, dt: dt, half: half}, err
	}
	if n := mlp + "switch_mlp." + proj + ".weight"; s.has(n) {
		return one(n, -1, p.Shape)
	}
	fused := mlp + "experts.down_proj"
	if proj != "down_proj" {
		fused = mlp + "experts.gate_up_proj"
	}
	switch {
	case s.has(fused) && proj == "down_proj":
		return one(fused, -1, p.Shape)
	case s.has(fused) && proj == "up_proj":
		return one(fused, 1, []int{e, 2 * out, in})
	case s.has(fused):
		return one(fused, 0, []int{e, 2 * out, in})
	}
	if !s.has(fmt.Sprintf("%sexperts.0.%s.weight", mlp, proj)) {
		return expertPlan{}, s.Fail(fused, checkpoint.ErrTensorNotFound, "not found (nor %sswitch_mlp.%s.weight, %sexperts.0.%s.weight)", mlp, proj, mlp, proj)
	}
	plan := expertPlan{half: -1}
	for x := range e {
		name := fmt.Sprintf("%sexperts.%d.%s.weight", mlp, x, proj)
		t, d, err := s.check(name, []int{out, in})
		if err != nil {
			return expertPlan{}, err
		}
		if x > 0 && d != plan.dt {
			return expertPlan{}, s.Fail(name, checkpoint.ErrDTypeMismatch, "dtype %s differs from expert 0's %s", d, plan.dt)
		}
		plan.dt = d
		plan.names = append(plan.names, name)
		plan.infos = append(plan.infos, t)
	}
	return plan, nil
}

// experts reads one stacked expert projection as planExperts found it.
func (s *CheckpointSource) experts(p Spec) (Host, error) {
	plan, err := s.planExperts(p)
	if err != nil {
		return Host{}, err
	}
	if len(plan.names) == 1 && plan.half < 0 {
		h, err := s.read(plan.names[0], p.Shape) // one stacked bank: in place
		h.Shape = p.Shape
		return h, err
	}
	res := make([]byte, 0, p.Shape[0]*p.Shape[1]*p.Shape[2]*plan.dt.Size())
	for _, n := range plan.names {
		if plan.half < 0 {
			if res, err = s.Checkpoint.AppendBytes(res, n); err != nil { // a guarded copy (checkpoint.CatchFault)
				return Host{}, fmt.Errorf("%s: %w", s.Family, err)
			}
			continue
		}
		b, err := s.Checkpoint.AppendBytes(nil, n)
		if err != nil {
			return Host{}, fmt.Errorf("%s: %w", s.Family, err)
		}
		// Expert x's gate rows come first, then its up rows.
		sz := p.Shape[1] * p.Shape[2] * plan.dt.Size()
		for x := range p.Shape[0] {
			base := x*2*sz + plan.half*sz
			res = append(res, b[base:base+sz]...)
		}
	}
	return Host{DType: plan.dt, Shape: p.Shape, Data: res}, nil
}
