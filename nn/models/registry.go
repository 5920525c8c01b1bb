package models

import (
	"github.com/ingotml/ingot/nn/qwen3"
	"github.com/ingotml/ingot/nn/qwen35"
)

// registry maps model_type (top level, or text_config's when the file nests one) to
// its family: the one table of what the engine can run. A family is its package's
// nn.Family value, adapted (adapt.go); adding one is its package and a line here.
var registry = map[string]entry{
	qwen35.TypeQwen35:        adapt(qwen35.Family),
	qwen35.TypeQwen35Text:    adapt(qwen35.Family),
	qwen35.TypeQwen35MoE:     adapt(qwen35.Family),
	qwen35.TypeQwen35MoEText: adapt(qwen35.Family),
	qwen35.TypeQwen3Next:     adapt(qwen35.Family), // Qwen3.5's ancestor: the same layers
	qwen3.TypeQwen3:          adapt(qwen3.Family),  // dense Qwen3: attention only, the control
}
