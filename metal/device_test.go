package metal_test

import (
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/metal"
)

// A *GPU is a graph device on every platform (metal cannot import graph to
// say so itself).
var _ graph.Device = (*metal.GPU)(nil)
