package play

import (
	"encoding/json"
	"fmt"
)

// quantization describes a pasted config's "quantization" (or
// "quantization_config") block, as mlx-community writes it: "4-bit g64" ("" when the
// config has none, or no config was pasted). The prediction does not depend on it: a
// quantized linear's three arrays are counted when a checkpoint is loaded.
func quantization(config string) string {
	if config == "" {
		return ""
	}
	var c map[string]json.RawMessage
	if json.Unmarshal([]byte(config), &c) != nil {
		return ""
	}
	for _, key := range []string{"quantization", "quantization_config"} {
		var q struct {
			Bits      int `json:"bits"`
			GroupSize int `json:"group_size"`
		}
		if raw, ok := c[key]; ok && json.Unmarshal(raw, &q) == nil && q.Bits > 0 {
			return fmt.Sprintf("%d-bit g%d", q.Bits, q.GroupSize)
		}
	}
	return ""
}
