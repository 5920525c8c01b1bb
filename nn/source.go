package nn

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strings"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn/checkpoint"
	"github.com/ingotml/ingot/tensor"
)

// Kind says what a parameter is: how a random model draws it, how a checkpoint may
// store it and whether it may be quantized. A family names each parameter it builds
// with one (Builder), so every source (random, checkpoint) treats it alike.
type Kind int

// The parameter kinds.
const (
	KindWeight      Kind = iota // a linear weight [out, in]; quantizable
	KindBias                    // a linear bias [out]
	KindEmbed                   // the embedding table [vocab, H]; quantizable
	KindNorm                    // a norm weight used as stored (RMSNorm, GatedRMSNorm)
	KindCentredNorm             // a zero-centred RMSNorm weight: Hugging Face stores w, the model uses 1 + w
	KindConv                    // a depthwise conv1d weight [C, K] (HF stores [C, 1, K], mlx-lm [C, K, 1])
	KindLogDecay                // a recurrence's A_log [Hv]
	KindDtBias                  // a recurrence's dt_bias [Hv]
	KindExperts                 // stacked experts "<mlp>.experts.<proj>": gate/up [E, I, H], down [E, H, I]; quantizable
)

// Quantizable reports whether a checkpoint may store a parameter of kind k quantized.
func (k Kind) Quantizable() bool { return k == KindWeight || k == KindEmbed || k == KindExperts }

// splitExperts splits the name of a stacked expert projection, "<mlp>.experts.<proj>",
// into "<mlp>." and "<proj>"; ok is false for any other name.
func splitExperts(name string) (mlp, proj string, ok bool) {
	i := strings.LastIndex(name, ".experts.")
	if i < 0 {
		return "", "", false
	}
	return name[:i+1], name[i+len(".experts."):], true
}

// Spec is one parameter as a build asks a Source for it: the model's name for it
// (Hugging Face's runtime naming; for KindExperts the virtual
// "model.layers.<i>.mlp.experts.<gate_proj|up_proj|down_proj>"), its kind and the
// shape the model uses.
type Spec struct {
	Name  string
	Kind  Kind
	Shape []int
}

// Source supplies a model's parameters: a checkpoint (CheckpointSource) or a random
// draw (RandomSource). Values come in the model's layout (zero-centred norms already
// 1 + w, conv [C, K], experts stacked) and in their stored dtype. The checks come
// apart from the loads so that a dry run (Record) reads no tensor data and still
// refuses what a load would.
type Source interface {
	// Load returns p's values.
	Load(p Spec) (Host, error)
	// Stored checks p exactly as Load would and says how it is stored, reading no
	// tensor data (the zero Stored for a random model).
	Stored(p Spec) (Stored, error)
	// Quantized returns module's affine-quantized weight placed on g, with ok false
	// when the module is stored in float. shape is the float matrix the model expects
	// ([out, in], or [E, out, in] for stacked experts).
	Quantized(g *graph.Graph, module string, shape []int) (w tensor.QuantizedWeight, ok bool, err error)
	// StoredQuantized is Quantized's check, reading no tensor data.
	StoredQuantized(module string, shape []int) (st Stored, ok bool, err error)
}

// RandomSource draws deterministic float32 parameters from math/rand. Scales keep
// activations O(1): linear weights and experts ~ N(0, s^2) with s = 0.5/sqrt(in)
// clamped to [0.02, 0.1], the embedding ~ N(0, 0.25), norms and dt_bias near 1, biases
// near 0, conv weights ~ N(0, 0.0625), A_log = log(U(1, 16)). A random model has no
// quantized module. The zero RandomSource serves dry runs only (it draws nothing).
type RandomSource struct{ rng *rand.Rand }

// NewRandomSource returns the source of the random model drawn from seed.
func NewRandomSource(seed int64) *RandomSource {
	return &RandomSource{rng: rand.New(rand.NewSource(seed))}
}

// Load draws p.
func (r *RandomSource) Load(p Spec) (Host, error) {
	n := 1
	for _, d := range p.Shape {
		n *= d
	}
	v := make([]float32, n)
	switch p.Kind {
	case KindNorm, KindCentredNorm, KindDtBias:
		r.fill(v, 1, 0.05)
	case KindLogDecay:
		for i := range v {
			v[i] = float32(math.Log(1 + 15*r.rng.Float64()))
		}
	case KindEmbed:
		r.fill(v, 0, 0.5)
	case KindConv:
		r.fill(v, 0, 0.25)
	case KindBias:
		r.fill(v, 0, 0.02)
	default: // KindWeight, KindExperts: the last axis is the input width
		in := p.Shape[len(p.Shape)-1]
		r.fill(v, 0, min(0.1, max(0.02, 0.5/math.Sqrt(float64(in)))))
	}
	return HostFloat32(v, p.Shape...), nil
}

func (r *RandomSource) fill(v []float32, mean, std float64) {
	for i := range v {
		v[i] = float32(mean + std*r.rng.NormFloat64())
	}
}

// Stored: a random parameter is one float32 array (the zero Stored).
func (r *RandomSource) Stored(Spec) (Stored, error) { return Stored{}, nil }

// Quantized: random models are float.
func (r *RandomSource) Quantized(*graph.Graph, string, []int) (tensor.QuantizedWeight, bool, error) {
	return tensor.QuantizedWeight{}, false, nil
}

// StoredQuantized: random models are float.
func (r *RandomSource) StoredQuantized(string, []int) (Stored, bool, error) {
	return Stored{}, false, nil
}

// RandomCheckpoint returns the tensors of a Hugging Face checkpoint holding the
// weights build draws from NewRandomSource(seed), rounded to dt (checkpoint.F32, F16
// or BF16): names as the model asks for them, zero-centred norms stored as w (the
// model adds 1), conv1d as [C, 1, K], stacked experts as save_pretrained writes them
// ("<mlp>.experts.<e>.<proj>.weight"). build builds the family's model on g from the
// source it is given (the model is dropped). Written by checkpoint.WriteCheckpoint
// with the config's config.json, it is a real-size test model made without any
// download (cmd/quantize -random). family prefixes the errors.
func RandomCheckpoint(family string, seed int64, dt checkpoint.DType, build func(g *graph.Graph, src Source) error) ([]checkpoint.WriteTensor, error) {
	edt, ok := checkpoint.EngineDType(dt)
	if !ok {
		return nil, fmt.Errorf("%s: random checkpoint dtype %s: want F32, F16 or BF16", family, dt)
	}
	r := &recordSource{RandomSource: NewRandomSource(seed), dt: edt, st: dt}
	if err := build(graph.NewCPU(graph.Options{}), r); err != nil {
		return nil, err
	}
	return r.out, nil
}

// recordSource is RandomSource that also records each parameter, in dtype dt and
// Hugging Face's layout; the model gets the rounded values.
type recordSource struct {
	*RandomSource
	dt  tensor.DType
	st  checkpoint.DType // dt's name in the files
	out []checkpoint.WriteTensor
}

func (r *recordSource) Load(p Spec) (Host, error) {
	h, err := r.RandomSource.Load(p)
	if err != nil {
		return h, err
	}
	if p.Kind == KindCentredNorm {
		h = h.Map(func(v float64) float64 { return v - 1 }) // HF stores w, the model uses 1 + w
	}
	c := h.As(r.dt)
	st := r.st
	switch p.Kind {
	case KindConv:
		r.out = append(r.out, checkpoint.WriteTensor{Name: p.Name, DType: st, Shape: []int{p.Shape[0], 1, p.Shape[1]}, Data: c.Data})
	case KindExperts:
		mlp, proj, _ := splitExperts(p.Name)
		sz := len(c.Data) / p.Shape[0]
		for e := range p.Shape[0] {
			r.out = append(r.out, checkpoint.WriteTensor{Name: fmt.Sprintf("%sexperts.%d.%s.weight", mlp, e, proj),
				DType: st, Shape: slices.Clone(p.Shape[1:]), Data: c.Data[e*sz : (e+1)*sz]})
		}
	default:
		r.out = append(r.out, checkpoint.WriteTensor{Name: p.Name, DType: st, Shape: slices.Clone(p.Shape), Data: c.Data})
	}
	if p.Kind == KindCentredNorm {
		return c.Map(func(w float64) float64 { return 1 + w }), nil
	}
	return c, nil
}
