package main

import (
	"fmt"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/models"
	"github.com/ingotml/ingot/nn/qwen35"
)

// modelConfig is the run's model configuration: the structure of --config's file
// (its width shrunk by --hidden and its expert count by --experts when given), or the
// repro's random model of --model-type.
func modelConfig(o *options, spec runSpec) (*qwen35.Config, error) {
	if o.configPath == "" {
		cfg, err := qwen35.ReproConfig(qwen35.ReproOptions{ModelType: o.modelType, Layers: o.layers, Interval: o.interval,
			Experts: o.experts, Hidden: o.hidden, AttentionOnly: spec.attentionOnly})
		if err != nil {
			return nil, fmt.Errorf("%w: %v", errUsage, err)
		}
		return cfg, nil
	}
	cfg, err := qwen35.LoadConfig(o.configPath)
	if err != nil {
		return nil, fmt.Errorf("%w: --config: %v", errUsage, err)
	}
	if o.set["hidden"] {
		cfg.HiddenSize = o.hidden
	}
	if o.set["experts"] {
		if !cfg.IsMoE() {
			return nil, fmt.Errorf("%w: --experts: %s describes a dense model", errUsage, o.configPath)
		}
		cfg.NumExperts = o.experts
	}
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("%w: --config %s with --hidden/--experts: %v", errUsage, o.configPath, err)
	}
	return cfg, nil
}

// buildModel makes the model on g through the model registry, as a checkpoint's
// config.json would (the one place a model is constructed).
func buildModel(o *options, cfg *qwen35.Config, g *graph.Graph) (nn.Model, error) {
	raw, err := cfg.MarshalHF()
	if err != nil {
		return nil, err
	}
	return models.Random(raw, g, o.seed, models.Options{OpsGatedDelta: o.ops})
}

// memEstimate is what a run will hold at its peak, in bytes.
type memEstimate struct {
	weights  int64 // the model's parameters (float32 device buffers)
	arrays   int   // how many parameter arrays (buffer objects) the weights are
	kv       int64 // the attention layers' KV storage at the last token
	retired  int64 // retired KV blocks the allocator cache keeps (no clearing)
	heap     int64 // Go heap beyond the buffers: graph nodes, tokens, one parameter being drawn
	largest  int64 // the largest parameter
	kvPerTok int64 // KV bytes per token per batch row, all attention layers
}

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

// estimateMemory adds up the parameters build will draw (the shapes in nn/qwen35), the
// KV storage and the host memory the run will need, before anything is allocated.
func estimateMemory(o *options, spec runSpec, cfg *qwen35.Config, limit int) memEstimate {
	var e memEstimate
	forEachParam(cfg, func(dims ...int) {
		n := int64(f32)
		for _, d := range dims {
			n *= int64(d)
		}
		e.weights += n
		e.arrays++
		e.largest = max(e.largest, n)
	})
	return estimateRun(o, spec, cfg, limit, e)
}

// forEachParam calls add with the shape of every parameter array the model of cfg is
// built from (one device buffer each when it is stored in float), in build order.
func forEachParam(cfg *qwen35.Config, add func(dims ...int)) {
	h, v := cfg.HiddenSize, cfg.VocabSize
	add(v, h) // embed
	for i := range cfg.NumLayers {
		add(h) // input norm
		add(h) // post-attention norm
		if cfg.IsAttention(i) {
			nh, nkv, hd := cfg.NumHeads, cfg.NumKVHeads, cfg.HeadDim
			add(nh*hd*2, h)
			add(nkv*hd, h)
			add(nkv*hd, h)
			add(h, nh*hd)
			add(hd)
			add(hd)
		} else {
			kd, vd := cfg.LinearNumKeyHeads*cfg.LinearKeyHeadDim, cfg.LinearNumValueHeads*cfg.LinearValueHeadDim
			hv := cfg.LinearNumValueHeads
			if cfg.FusedGDNProjections() {
				add(2*kd+2*vd, h)
				add(2*hv, h)
			} else {
				add(2*kd+vd, h)
				add(vd, h)
				add(hv, h)
				add(hv, h)
			}
			add(2*kd+vd, cfg.LinearConvKernel)
			add(hv) // -exp(A_log)
			add(hv) // dt_bias
			add(cfg.LinearValueHeadDim)
			add(h, vd)
		}
		if cfg.IsSparse(i) {
			ne, in, si := cfg.NumExperts, cfg.MoEIntermediateSize, cfg.SharedExpertIntermediateSize
			add(ne, h)
			add(ne, in, h)
			add(ne, in, h)
			add(ne, h, in)
			add(si, h)
			add(si, h)
			add(h, si)
			add(1, h)
		} else {
			add(cfg.IntermediateSize, h)
			add(cfg.IntermediateSize, h)
			add(h, cfg.IntermediateSize)
		}
	}
	add(h) // final norm
	if !cfg.TieWordEmbeddings {
		add(v, h)
	}
}

// estimateRun completes e (whose weights, arrays and largest are filled in) with the
// KV storage and the host memory the run will need.
func estimateRun(o *options, spec runSpec, cfg *qwen35.Config, limit int, e memEstimate) memEstimate {
	nAttn := cfg.NumLayers - cfg.NumGDN()
	rows, length, tokens := 1, 8+o.tokens, o.tokens
	if o.mode == "server" {
		rows, length, tokens = o.concurrency, o.promptLen+o.reqTokens, o.requests*o.reqTokens
	}
	e.kvPerTok = int64(nAttn) * 2 * int64(cfg.NumKVHeads*cfg.HeadDim) * f32
	blocks := int64((length + kvStep - 1) / kvStep)
	e.kv = int64(rows) * blocks * kvStep * e.kvPerTok
	if o.clearCacheEvery == 0 {
		// Each growth retires the previous storage: blocks of 1, 2, ... n-1 steps.
		e.retired = int64(rows) * e.kvPerTok * kvStep * blocks * (blocks - 1) / 2
	}
	// The dead chain's nodes, while it can grow (the resource limit ends it).
	var links int64
	if spec.policy == cache.Lazy && o.mode != "plain" {
		links = min(int64(tokens)*int64(cfg.NumGDN()), int64(limit))
	}
	e.heap = links*hostPerLinkBound + int64(tokens)*4 + e.largest + runtimeSlack
	return e
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
