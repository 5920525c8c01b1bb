package qwen35

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"strings"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/kernels"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/checkpoint"
	"github.com/ingotml/ingot/tensor"
)

// NewRandom builds a model of cfg with deterministic random weights drawn from
// math/rand seeded with seed (the leak repro's model). Scales keep activations O(1):
// linear weights ~ N(0, s^2) with s = 0.5/sqrt(in) clamped to [0.02, 0.1], norms near 1,
// A_log = log(U(1, 16)), dt_bias near 1.
func NewRandom(cfg *Config, g *graph.Graph, seed int64, opt nn.Options) (*Model, error) {
	return build(cfg, g, &randomSource{rng: rand.New(rand.NewSource(seed))}, opt)
}

type randomSource struct{ rng *rand.Rand }

// quantized: random models are float.
func (r *randomSource) quantized(*graph.Graph, string, []int) (tensor.QuantizedWeight, bool, error) {
	return tensor.QuantizedWeight{}, false, nil
}

// stored: a random parameter is one float32 array (the zero Stored).
func (r *randomSource) stored(param) (nn.Stored, error) { return nn.Stored{}, nil }

// storedQuantized: random models are float.
func (r *randomSource) storedQuantized(string, []int) (nn.Stored, bool, error) {
	return nn.Stored{}, false, nil
}

// mlxLM: random models follow HF's rules.
func (r *randomSource) mlxLM() bool { return false }

func (r *randomSource) load(p param) (nn.Host, error) {
	n := 1
	for _, d := range p.shape {
		n *= d
	}
	v := make([]float32, n)
	switch p.kind {
	case kindNorm, kindGatedNorm, kindDtBias:
		r.fill(v, 1, 0.05)
	case kindALog:
		for i := range v {
			v[i] = float32(math.Log(1 + 15*r.rng.Float64()))
		}
	case kindEmbed:
		r.fill(v, 0, 0.5)
	case kindConv:
		r.fill(v, 0, 0.25)
	case kindBias:
		r.fill(v, 0, 0.02)
	default: // kindWeight, kindExperts: the last axis is the input width
		in := p.shape[len(p.shape)-1]
		r.fill(v, 0, min(0.1, max(0.02, 0.5/math.Sqrt(float64(in)))))
	}
	return nn.HostFloat32(v, p.shape...), nil
}

func (r *randomSource) fill(v []float32, mean, std float64) {
	for i := range v {
		v[i] = float32(mean + std*r.rng.NormFloat64())
	}
}

// RandomCheckpoint returns the tensors of a Hugging Face checkpoint of cfg's structure
// holding NewRandom's weights for seed, rounded to dt (checkpoint.F32, checkpoint.F16 or checkpoint.BF16):
// names under "model." and "lm_head.weight", zero-centred norms stored as w (the
// model adds 1), conv1d as [C, 1, K], experts as save_pretrained writes them
// ("<mlp>.experts.<e>.<proj>.weight"). Written by checkpoint.WriteCheckpoint with cfg's
// config.json, it is a real-size test model made without any download (see
// cmd/quantize -random); quantize it for the quantized formats.
func RandomCheckpoint(cfg *Config, seed int64, dt checkpoint.DType) ([]checkpoint.WriteTensor, error) {
	edt, ok := checkpoint.EngineDType(dt)
	if !ok {
		return nil, fmt.Errorf("qwen35: random checkpoint dtype %s: want F32, F16 or BF16", dt)
	}
	r := &recordSource{randomSource: randomSource{rng: rand.New(rand.NewSource(seed))}, dt: edt, st: dt}
	// The builder names and shapes every parameter; the model it builds is dropped.
	if _, err := build(cfg, graph.NewCPU(graph.Options{}), r, nn.Options{}); err != nil {
		return nil, err
	}
	return r.out, nil
}

// recordSource is randomSource that also records each parameter, in dtype dt and
// Hugging Face's layout.
type recordSource struct {
	randomSource
	dt  tensor.DType
	st  checkpoint.DType // dt's name in the files
	out []checkpoint.WriteTensor
}

func (r *recordSource) load(p param) (nn.Host, error) {
	h, err := r.randomSource.load(p)
	if err != nil {
		return h, err
	}
	if p.kind == kindNorm {
		h = h.Map(func(v float64) float64 { return v - 1 }) // HF stores w, the model uses 1 + w
	}
	c := nn.Host{DType: r.dt, Shape: p.shape, Data: make([]byte, h.Len()*r.dt.Size())}
	f := kernels.F32(h.Data)
	for i, v := range f {
		kernels.Store(r.dt, c.Data, i, float64(v))
	}
	st := r.st
	switch p.kind {
	case kindConv:
		r.out = append(r.out, checkpoint.WriteTensor{Name: p.name, DType: st, Shape: []int{p.shape[0], 1, p.shape[1]}, Data: c.Data})
	case kindExperts:
		i := strings.LastIndex(p.name, ".experts.")
		mlp, proj := p.name[:i+1], p.name[i+len(".experts."):]
		sz := len(c.Data) / p.shape[0]
		for e := range p.shape[0] {
			r.out = append(r.out, checkpoint.WriteTensor{Name: fmt.Sprintf("%sexperts.%d.%s.weight", mlp, e, proj),
				DType: st, Shape: slices.Clone(p.shape[1:]), Data: c.Data[e*sz : (e+1)*sz]})
		}
	default:
		r.out = append(r.out, checkpoint.WriteTensor{Name: p.name, DType: st, Shape: slices.Clone(p.shape), Data: c.Data})
	}
	if p.kind == kindNorm {
		return c.Map(func(w float64) float64 { return 1 + w }), nil
	}
	return c, nil
}
