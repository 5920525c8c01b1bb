package main

import (
	"errors"
	"fmt"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/checkpoint"
	"github.com/ingotml/ingot/nn/models"
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

// memEstimate is what a run will hold at its peak, in bytes.
type memEstimate struct {
	weights  int64 // the model's parameters
	arrays   int   // how many buffer objects the weights are
	kv       int64 // the attention layers' KV storage at the last token
	retired  int64 // retired KV blocks the allocator cache keeps (no clearing)
	heap     int64 // Go heap beyond the buffers: graph nodes, tokens, one parameter being drawn
	largest  int64 // the largest parameter
	kvPerTok int64 // KV bytes per token per batch row, all attention layers
}

// total is the sum of the parts; estimate checks that it cannot overflow.
func (e memEstimate) total() int64 { return e.weights + e.kv + e.retired + e.heap }

// Bytes per float32 element, and the KV growth quantum (mlx-lm's KVCache.step).
const (
	f32    = 4
	kvStep = 256
	// hostPerLinkBound is Go heap per dead link, rounded up from the measured ~707 bytes.
	hostPerLinkBound = 1024
	// runtimeSlack covers the Go runtime, one step's graph and transient buffers.
	runtimeSlack = 64 << 20
)

// errTooLarge is wrapped by an estimate whose arithmetic overflows int64: such a
// model cannot fit any machine.
var errTooLarge = errors.New("the model's size overflows a 64-bit count")

// estimate adds up what a run of the described model will hold: its parameters (as
// the description says they are stored), the KV storage and the host memory, before
// anything is allocated. Every product and sum is checked: a config whose sizes
// overflow int64 is refused, never wrapped to a small number that "fits".
func estimate(o *options, spec runSpec, d *nn.Description, limit int) (memEstimate, error) {
	var e memEstimate
	var err error
	if e.weights, e.largest, err = d.WeightBytes(); err != nil {
		return e, fmt.Errorf("%w: %w", errTooLarge, err)
	}
	e.arrays = d.WeightBuffers()
	nAttn := int64(nn.CountKinds(d.Kinds, nn.Attention))
	nGDN := int64(nn.CountKinds(d.Kinds, nn.Recurrent))
	rows, length, tokens := int64(1), int64(8+o.tokens), int64(o.tokens)
	if o.mode == "server" {
		rows, length, tokens = int64(o.concurrency), int64(o.promptLen+o.reqTokens), int64(o.requests)*int64(o.reqTokens)
	}
	blocks := (length + kvStep - 1) / kvStep
	links := int64(0)
	if spec.policy == cache.Lazy && o.mode != "plain" {
		// The dead chain's nodes, while it can grow (the resource limit ends it).
		links = min(tokens*nGDN, int64(limit))
	}
	ok := true
	mul := func(a, b int64) int64 {
		n, good := nn.MulInt64(a, b)
		ok = ok && good
		return n
	}
	add := func(a, b int64) int64 {
		n, good := nn.AddInt64(a, b)
		ok = ok && good
		return n
	}
	e.kvPerTok = mul(mul(mul(nAttn, 2), int64(d.KVWidth)), f32)
	e.kv = mul(mul(mul(rows, blocks), kvStep), e.kvPerTok)
	if o.clearCacheEvery == 0 {
		// Each growth retires the previous storage: blocks of 1, 2, ... n-1 steps.
		e.retired = mul(mul(mul(rows, e.kvPerTok), kvStep), mul(blocks, max(blocks-1, 0))/2)
	}
	e.heap = add(add(add(mul(links, hostPerLinkBound), mul(tokens, 4)), e.largest), runtimeSlack)
	add(add(add(e.weights, e.kv), e.retired), e.heap)
	if !ok {
		return e, errTooLarge
	}
	return e, nil
}

// checkFits refuses a run whose estimate exceeds the allocator's memory limit (the
// same limit a malloc would be refused at; on the CPU device 0.95 x RAM).
func checkFits(e memEstimate, memLimit int64) error {
	return checkFitsHint(e, memLimit, "use a smaller --hidden, --experts, --layers or --tokens")
}

// checkFitsHint is checkFits with the advice the message ends with.
func checkFitsHint(e memEstimate, memLimit int64, hint string) error {
	if e.total() <= memLimit {
		return nil
	}
	return fmt.Errorf("%w: the model needs ~%s (weights %s, KV cache %s, retired KV blocks %s, Go heap %s), which exceeds this machine's memory limit of %s; %s",
		errUsage, gb(e.total()), gb(e.weights), gb(e.kv), gb(e.retired), gb(e.heap), gb(memLimit), hint)
}

func gb(n int64) string { return fmt.Sprintf("%.2f GB", float64(n)/1e9) }

// readConfigFile reads --config's file, bounded, never blocking on a FIFO.
func readConfigFile(path string) ([]byte, error) { return checkpoint.ReadMetadataFile(path) }
