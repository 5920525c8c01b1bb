package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"

	"github.com/ingotml/ingot/alloc"
	"github.com/ingotml/ingot/nn/checkpoint"
	"github.com/ingotml/ingot/nn/models"
	"github.com/ingotml/ingot/predict"
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

// fileSizes records the input's weight files' sizes as opened (their mappings' sizes).
func fileSizes(src *checkpoint.Checkpoint) map[string]int64 {
	sizes := map[string]int64{}
	for _, f := range src.Files() {
		if st, err := os.Stat(f); err == nil {
			sizes[f] = st.Size()
		}
	}
	return sizes
}

// inputChanged turns a write that failed on bad memory (EFAULT: the kernel copying
// from a mapping whose file shrank) into the error decode gives for a checkpoint that
// changed while mapped (exit 64), naming the input file, not the scratch file written.
func inputChanged(src *checkpoint.Checkpoint, sizes map[string]int64, err error) error {
	if !errors.Is(err, syscall.EFAULT) {
		return err
	}
	for f, n := range sizes {
		if st, serr := os.Stat(f); serr != nil || st.Size() != n {
			return fmt.Errorf("%w: -in: %w", errUsage, &checkpoint.CheckpointError{Path: f, Reason: "copying its tensors", Err: checkpoint.ErrFileChanged})
		}
	}
	return err
}

// checkRandomFits refuses a random model whose weights, drawn in memory before they
// are written, would not fit this machine's memory: the estimate decode makes
// (predict.EstimateMemory) against the allocator's memory limit.
func checkRandomFits(cfg models.Config) error {
	d, err := cfg.Describe()
	if err != nil {
		return err
	}
	est, err := predict.EstimateMemory(d, predict.MemoryRun{})
	if err != nil {
		return err
	}
	return est.Fits(alloc.New(alloc.CPUProvider(), alloc.Config{}).Stats().MemoryLimit, "use a smaller config")
}
