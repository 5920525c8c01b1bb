package qwen3

import (
	"fmt"
	"math"
	"math/rand"
	"slices"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/kernels"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/checkpoint"
	"github.com/ingotml/ingot/tensor"
)

// NewRandom builds a model of cfg with deterministic random weights drawn from
// math/rand seeded with seed. Scales keep activations O(1): linear weights ~ N(0, s^2)
// with s = 0.5/sqrt(in) clamped to [0.02, 0.1], the embedding ~ N(0, 0.25), norms
// near 1, biases near 0.
func NewRandom(cfg *Config, g *graph.Graph, seed int64, opt nn.Options) (*Model, error) {
	return build(cfg, g, randomSource{rand.New(rand.NewSource(seed))}, opt)
}

// randomSource draws float32 parameters; a random model has no quantized module.
type randomSource struct{ rng *rand.Rand }

func (r randomSource) quantized(*graph.Graph, string, []int) (tensor.QuantizedWeight, nn.Stored, bool, error) {
	return tensor.QuantizedWeight{}, nn.Stored{}, false, nil
}

// float draws the parameter; in a dry run (g nil) it draws nothing and the parameter
// is one float32 array (the zero Stored).
func (r randomSource) float(g *graph.Graph, _ string, k kind, shape []int) (tensor.Array, nn.Stored, error) {
	if g == nil {
		return tensor.Array{}, nn.Stored{}, nil
	}
	n := 1
	for _, d := range shape {
		n *= d
	}
	mean, std := 0.0, 0.0
	switch k {
	case kindNorm:
		mean, std = 1, 0.05
	case kindEmbed:
		std = 0.5
	case kindBias:
		std = 0.02
	default: // kindWeight: the last axis is the input width
		std = min(0.1, max(0.02, 0.5/math.Sqrt(float64(shape[len(shape)-1]))))
	}
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(mean + std*r.rng.NormFloat64())
	}
	return nn.HostFloat32(v, shape...).Array(g), nn.Stored{}, nil
}

// RandomCheckpoint returns the tensors of a Hugging Face checkpoint of cfg's structure
// holding NewRandom's weights for seed, rounded to dt (F32, F16 or BF16): a real-size
// test model made without any download (cmd/quantize -random).
func RandomCheckpoint(cfg *Config, seed int64, dt checkpoint.DType) ([]checkpoint.WriteTensor, error) {
	if _, ok := checkpoint.EngineDType(dt); !ok {
		return nil, fmt.Errorf("qwen3: random checkpoint dtype %s: want F32, F16 or BF16", dt)
	}
	r := &recordSource{randomSource: randomSource{rand.New(rand.NewSource(seed))}, st: dt}
	// The builder names and shapes every parameter; the model it builds is dropped.
	if _, err := build(cfg, graph.NewCPU(graph.Options{}), r, nn.Options{}); err != nil {
		return nil, err
	}
	return r.out, r.err
}

// recordSource is randomSource that also records each parameter, stored as st (the
// model's layout is Hugging Face's).
type recordSource struct {
	randomSource
	st  checkpoint.DType
	out []checkpoint.WriteTensor
	err error
}

func (r *recordSource) float(g *graph.Graph, name string, k kind, shape []int) (tensor.Array, nn.Stored, error) {
	a, st, err := r.randomSource.float(g, name, k, shape)
	if err != nil || g == nil {
		return a, st, err
	}
	v, err := a.Float32s()
	if err != nil {
		return a, st, err
	}
	dt, _ := checkpoint.EngineDType(r.st)
	data := make([]byte, len(v)*dt.Size())
	for i, x := range v {
		kernels.Store(dt, data, i, float64(x))
	}
	r.out = append(r.out, checkpoint.WriteTensor{Name: name, DType: r.st, Shape: slices.Clone(shape), Data: data})
	return a, st, nil
}
