package repro

import (
	"github.com/ingotml/ingot/alloc"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/models"
)

// Random builds, on a new graph over dev with resource limit limit, the model of cfg
// (from the model registry) with random weights from seed, and uploads its weights. A limit below the weights is a *BaselineError. The graph
// releases explicitly (graph.Options.ExplicitRelease): the loops here release every
// array they drop.
func Random(dev graph.Device, cfg models.Config, seed int64, limit int) (*graph.Graph, nn.Model, error) {
	g := graph.New(dev, graph.Options{Alloc: alloc.Config{ResourceLimit: limit}, ExplicitRelease: true})
	m, err := cfg.Random(g, seed, nn.Options{})
	if err == nil {
		err = g.Synchronize() // the weights are uploaded: a limit below them fails here
	}
	if IsLimit(err) {
		return nil, nil, &BaselineError{Why: "its weight arrays alone need more buffer objects than that", Err: err}
	}
	if err != nil {
		return nil, nil, err
	}
	return g, m, nil
}
