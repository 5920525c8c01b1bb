package models

import (
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/checkpoint"
	"github.com/ingotml/ingot/nn/qwen3"
	"github.com/ingotml/ingot/nn/qwen35"
)

// registry maps model_type (top level, or text_config's when the file nests one) to
// its family: the one table of what the engine can run.
var registry = map[string]Family{
	qwen35.TypeQwen35:        qwen35Family,
	qwen35.TypeQwen35Text:    qwen35Family,
	qwen35.TypeQwen35MoE:     qwen35Family,
	qwen35.TypeQwen35MoEText: qwen35Family,
	qwen35.TypeQwen3Next:     qwen35Family, // Qwen3.5's ancestor: the same layers
	qwen3.TypeQwen3:          qwen3Family,  // dense Qwen3: attention only, the control
}

var qwen35Family = Family{
	Parse: func(config []byte) (Config, error) {
		c, err := qwen35.ParseHFConfig(config)
		if err != nil {
			return nil, err
		}
		return qwen35Config{c}, nil
	},
	Repro: func(o nn.ReproOptions) (Config, error) {
		c, err := qwen35.ReproConfig(o)
		if err != nil {
			return nil, err
		}
		return qwen35Config{c}, nil
	},
	Load: func(ck *checkpoint.Checkpoint, g *graph.Graph, opt nn.Options) (nn.Model, error) {
		return qwen35.LoadCheckpoint(ck, g, opt)
	},
	Inspect:   qwen35.InspectCheckpoint,
	MLXLayout: qwen35.MLXLayout,
}

// qwen35Config adapts *qwen35.Config to Config.
type qwen35Config struct{ c *qwen35.Config }

func (q qwen35Config) Describe() (*nn.Description, error) { return qwen35.Describe(q.c) }

func (q qwen35Config) Random(g *graph.Graph, seed int64, opt nn.Options) (nn.Model, error) {
	return qwen35.NewRandom(q.c, g, seed, opt)
}

func (q qwen35Config) JSON() ([]byte, error) { return q.c.MarshalHF() }

func (q qwen35Config) RandomCheckpoint(seed int64, dt checkpoint.DType) ([]checkpoint.WriteTensor, error) {
	return qwen35.RandomCheckpoint(q.c, seed, dt)
}

func (q qwen35Config) Resize(hidden, experts int) (Config, error) {
	c := *q.c
	if hidden > 0 {
		c.HiddenSize = hidden
	}
	if experts > 0 {
		if !c.IsMoE() {
			return nil, ErrDense
		}
		c.NumExperts = experts
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return qwen35Config{&c}, nil
}

var qwen3Family = Family{
	Parse: func(config []byte) (Config, error) {
		c, err := qwen3.ParseHFConfig(config)
		if err != nil {
			return nil, err
		}
		return qwen3Config{c}, nil
	},
	Repro: func(o nn.ReproOptions) (Config, error) {
		c, err := qwen3.ReproConfig(o)
		if err != nil {
			return nil, err
		}
		return qwen3Config{c}, nil
	},
	Load: func(ck *checkpoint.Checkpoint, g *graph.Graph, opt nn.Options) (nn.Model, error) {
		return qwen3.LoadCheckpoint(ck, g, opt)
	},
	Inspect:   qwen3.InspectCheckpoint,
	MLXLayout: qwen3.MLXLayout,
}

// qwen3Config adapts *qwen3.Config to Config.
type qwen3Config struct{ c *qwen3.Config }

func (q qwen3Config) Describe() (*nn.Description, error) { return qwen3.Describe(q.c) }

func (q qwen3Config) Random(g *graph.Graph, seed int64, opt nn.Options) (nn.Model, error) {
	return qwen3.NewRandom(q.c, g, seed, opt)
}

func (q qwen3Config) JSON() ([]byte, error) { return q.c.MarshalHF() }

func (q qwen3Config) RandomCheckpoint(seed int64, dt checkpoint.DType) ([]checkpoint.WriteTensor, error) {
	return qwen3.RandomCheckpoint(q.c, seed, dt)
}

func (q qwen3Config) Resize(hidden, experts int) (Config, error) {
	if experts > 0 {
		return nil, ErrDense
	}
	c := *q.c
	if hidden > 0 {
		c.HiddenSize = hidden
	}
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return qwen3Config{&c}, nil
}
