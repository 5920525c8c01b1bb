package qwen35

import (
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/checkpoint"
)

// Family is this package as the model registry (nn/models) takes it: one value, which
// the registry adapts with one line per model_type.
var Family = nn.Family[Config]{
	Parse:    ParseHFConfig,
	Repro:    ReproConfig,
	Describe: Describe,
	Random: func(c *Config, g *graph.Graph, seed int64, opt nn.Options) (nn.Model, error) {
		return NewRandom(c, g, seed, opt)
	},
	RandomCheckpoint: RandomCheckpoint,
	JSON:             (*Config).MarshalHF,
	Resize:           (*Config).Resize,
	Load: func(ck *checkpoint.Checkpoint, g *graph.Graph, opt nn.Options) (nn.Model, error) {
		return LoadCheckpoint(ck, g, opt)
	},
	Inspect:   InspectCheckpoint,
	MLXLayout: MLXLayout,
}
