package qwen35

import (
	"math"
	"math/rand"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn"
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
