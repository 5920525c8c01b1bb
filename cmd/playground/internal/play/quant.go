package play

import (
	"fmt"

	"github.com/ingotml/ingot/nn/checkpoint"
)

// quantization describes a pasted config's quantization block (read by
// checkpoint.ParseQuantConfig, as a checkpoint's load reads it): "4-bit g64" ("" when
// the config has none, no config was pasted, or the block is not one the loader
// takes). The prediction does not depend on it: a quantized linear's three arrays are
// counted when a checkpoint is loaded.
func quantization(config string) string {
	if config == "" {
		return ""
	}
	q, err := checkpoint.ParseQuantConfig([]byte(config))
	if err != nil || q == nil {
		return ""
	}
	return fmt.Sprintf("%d-bit g%d", q.Default.Bits, q.Default.GroupSize)
}
