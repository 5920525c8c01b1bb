package main

import (
	"strings"

	"github.com/ingotml/ingot/nn/checkpoint"
	"github.com/ingotml/ingot/nn/models"
)

// checkInput refuses, before anything is written, a float checkpoint that decode's
// loader would refuse or that cannot be quantized: models.Inspect runs the loader's own
// checks on config.json and every tensor the model reads (names, shapes, dtypes), and
// every float matrix must hold no NaN or infinity (kernels.ErrNonFinite), which
// quantization cannot encode.
func checkInput(src *checkpoint.Checkpoint) error {
	if _, err := models.Inspect(src.Dir); err != nil {
		return err
	}
	// Every float matrix is checked for NaN and infinities, which quantization cannot
	// encode (and which would make any run's logits NaN).
	for _, name := range src.Names() {
		info, _, _ := src.Info(name)
		if _, float := checkpoint.EngineDType(info.DType); float && len(info.Shape) >= 2 && strings.HasSuffix(name, ".weight") {
			if err := src.CheckFinite(name); err != nil {
				return err
			}
		}
	}
	return nil
}
