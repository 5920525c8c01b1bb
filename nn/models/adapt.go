package models

import (
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/checkpoint"
)

// entry is a registered family with its config type erased.
type entry struct {
	parse     func(config []byte) (Config, error)
	repro     func(o nn.ReproOptions) (Config, error)
	load      func(ck *checkpoint.Checkpoint, g *graph.Graph, opt nn.Options) (nn.Model, error)
	inspect   func(ck *checkpoint.Checkpoint) (*nn.Description, error)
	mlxLayout func(ck *checkpoint.Checkpoint) ([]checkpoint.WriteTensor, error)
}

// adapt makes a family's nn.Family value a registry entry: the one adapter every
// family goes through.
func adapt[C any, M nn.Model](f nn.Family[C, M]) entry {
	wrap := func(c *C, err error) (Config, error) {
		if err != nil {
			return nil, err
		}
		return config[C, M]{f, c}, nil
	}
	return entry{
		parse: func(data []byte) (Config, error) { return wrap(f.Parse(data)) },
		repro: func(o nn.ReproOptions) (Config, error) { return wrap(f.Repro(o)) },
		load: func(ck *checkpoint.Checkpoint, g *graph.Graph, opt nn.Options) (nn.Model, error) {
			return model(f.Load(ck, g, opt))
		},
		inspect:   f.Inspect,
		mlxLayout: f.MLXLayout,
	}
}

// model returns a family's model as an nn.Model: nil, not a typed nil, on error.
func model[M nn.Model](m M, err error) (nn.Model, error) {
	if err != nil {
		return nil, err
	}
	return m, nil
}

// config is a family's parsed configuration as a Config.
type config[C any, M nn.Model] struct {
	f nn.Family[C, M]
	c *C
}

func (x config[C, M]) Describe() (*nn.Description, error) { return x.f.Describe(x.c) }

func (x config[C, M]) Random(g *graph.Graph, seed int64, opt nn.Options) (nn.Model, error) {
	return model(x.f.Random(x.c, g, seed, opt))
}

func (x config[C, M]) JSON() ([]byte, error) { return x.f.JSON(x.c) }

func (x config[C, M]) RandomCheckpoint(seed int64, dt checkpoint.DType) ([]checkpoint.WriteTensor, error) {
	return x.f.RandomCheckpoint(x.c, seed, dt)
}

func (x config[C, M]) Resize(hidden, experts int) (Config, error) {
	c, err := x.f.Resize(x.c, hidden, experts)
	if err != nil {
		return nil, err
	}
	return config[C, M]{x.f, c}, nil
}
