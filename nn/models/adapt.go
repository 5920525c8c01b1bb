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
func adapt[C any](f nn.Family[C]) entry {
	wrap := func(c *C, err error) (Config, error) {
		if err != nil {
			return nil, err
		}
		return config[C]{f, c}, nil
	}
	return entry{
		parse:     func(data []byte) (Config, error) { return wrap(f.Parse(data)) },
		repro:     func(o nn.ReproOptions) (Config, error) { return wrap(f.Repro(o)) },
		load:      f.Load,
		inspect:   f.Inspect,
		mlxLayout: f.MLXLayout,
	}
}

// config is a family's parsed configuration as a Config.
type config[C any] struct {
	f nn.Family[C]
	c *C
}

func (x config[C]) Describe() (*nn.Description, error) { return x.f.Describe(x.c) }

func (x config[C]) Random(g *graph.Graph, seed int64, opt nn.Options) (nn.Model, error) {
	return x.f.Random(x.c, g, seed, opt)
}

func (x config[C]) JSON() ([]byte, error) { return x.f.JSON(x.c) }

func (x config[C]) RandomCheckpoint(seed int64, dt checkpoint.DType) ([]checkpoint.WriteTensor, error) {
	return x.f.RandomCheckpoint(x.c, seed, dt)
}

func (x config[C]) Resize(hidden, experts int) (Config, error) {
	c, err := x.f.Resize(x.c, hidden, experts)
	if err != nil {
		return nil, err
	}
	return config[C]{x.f, c}, nil
}
