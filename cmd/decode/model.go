package main

import (
	"errors"
	"fmt"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/checkpoint"
	"github.com/ingotml/ingot/nn/models"
	"github.com/ingotml/ingot/predict"
)

// modelConfig is the run's model configuration: the structure of --config's file
// (its width shrunk by --hidden and its expert count by --experts when given), or the
// repro's random model of --model-type.
func modelConfig(o *options, spec runSpec) (models.Config, error) {
	if o.configPath == "" {
		cfg, err := models.ReproConfig(nn.ReproOptions{ModelType: o.modelType, Layers: o.layers, Interval: o.interval,
			Experts: o.experts, Hidden: o.hidden, AttentionOnly: spec.attentionOnly})
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errUsage, err)
		}
		return cfg, nil
	}
	data, err := readConfigFile(o.configPath)
	if err != nil {
		return nil, fmt.Errorf("%w: --config: %v", errUsage, err)
	}
	cfg, err := models.ParseConfig(data)
	if err != nil {
		return nil, fmt.Errorf("%w: --config: load config %s: %v", errUsage, o.configPath, err)
	}
	hidden, experts := 0, 0
	if o.set["hidden"] {
		hidden = o.hidden
	}
	if o.set["experts"] {
		experts = o.experts
	}
	if hidden == 0 && experts == 0 {
		return cfg, nil
	}
	cfg, err = cfg.Resize(hidden, experts)
	switch {
	case errors.Is(err, models.ErrDense):
		return nil, fmt.Errorf("%w: --experts: %s describes a dense model", errUsage, o.configPath)
	case err != nil:
		return nil, fmt.Errorf("%w: --config %s with --hidden/--experts: %v", errUsage, o.configPath, err)
	}
	return cfg, nil
}

// memEstimate is what a run will hold at its peak (predict.Memory).
type memEstimate = predict.Memory

// errTooLarge is wrapped by an estimate whose arithmetic overflows int64.
var errTooLarge = predict.ErrTooLarge

// estimate is predict.EstimateMemory for the run o and spec describe.
func estimate(o *options, spec runSpec, d *nn.Description, limit int) (memEstimate, error) {
	r := predict.MemoryRun{Rows: 1, Length: int64(8 + o.tokens), Tokens: int64(o.tokens), Limit: limit,
		Lazy: spec.policy == cache.Lazy && o.mode != "plain", KeepRetired: o.clearCacheEvery == 0}
	if o.mode == "server" {
		r.Rows, r.Length, r.Tokens = int64(o.concurrency), int64(o.promptLen+o.reqTokens), int64(o.requests)*int64(o.reqTokens)
	}
	return predict.EstimateMemory(d, r)
}

// checkFits refuses a run whose estimate exceeds the allocator's memory limit (the
// same limit a malloc would be refused at; on the CPU device 0.95 x RAM).
func checkFits(e memEstimate, memLimit int64) error {
	return checkFitsHint(e, memLimit, "use a smaller --hidden, --experts, --layers or --tokens")
}

// checkFitsHint is checkFits with the advice the message ends with.
func checkFitsHint(e memEstimate, memLimit int64, hint string) error {
	if err := e.Fits(memLimit, hint); err != nil {
		return fmt.Errorf("%w: %w", errUsage, err)
	}
	return nil
}

func gb(n int64) string { return predict.GB(n) }

// readConfigFile reads --config's file, bounded, never blocking on a FIFO.
func readConfigFile(path string) ([]byte, error) { return checkpoint.ReadMetadataFile(path) }
