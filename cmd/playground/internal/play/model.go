package play

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/ingotml/ingot/alloc"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/qwen35"
	"github.com/ingotml/ingot/predict"
	"github.com/ingotml/ingot/repro"
)

// ModelSpec chooses a model: the repro's random model of a type and shape (the CLI's
// --model-type, --layers, --interval, --experts, --hidden, --attention-only), or a
// pasted config.json (--config; HF or mlx-community, nested text_config too).
type ModelSpec struct {
	ModelType     string `json:"model_type"`
	Layers        int    `json:"layers"`
	Interval      int    `json:"interval"`
	Experts       int    `json:"experts"`
	Hidden        int    `json:"hidden"`
	AttentionOnly bool   `json:"attention_only"`
	Config        string `json:"config"` // config.json's text; wins when not blank
}

// config is the model's configuration, as the CLI's modelConfig makes it.
func (s ModelSpec) config() (*qwen35.Config, error) {
	if strings.TrimSpace(s.Config) != "" {
		cfg, err := qwen35.ParseHFConfig([]byte(s.Config))
		if err != nil {
			return nil, fmt.Errorf("config.json: %w", err)
		}
		return cfg, nil
	}
	return qwen35.ReproConfig(qwen35.ReproOptions{ModelType: s.ModelType, Layers: s.Layers, Interval: s.Interval,
		Experts: s.Experts, Hidden: s.Hidden, AttentionOnly: s.AttentionOnly})
}

// runBuffersPerLayer is what a batch decode holds per layer besides the weights (cache
// state and batch metadata): cmd/decode's figure, which its TestPredictOnlyMatchesRun
// pins. It goes when nn/models describes each model's cache buffers.
const runBuffersPerLayer = 5

// description is what a prediction needs of a model. describe is the one place that
// finds it: swap its body for the model registry's description when that lands.
type description struct {
	kinds  []nn.LayerKind
	loaded int // device buffers after load: the weights and the model's constants
}

// describe counts what the model of cfg loads by building its narrow twin (hidden 64,
// vocabulary 128, the fewest experts its routing allows, MLPs of width 16) through the
// model registry: the buffer count depends on the tensors, not their sizes.
func describe(cfg *qwen35.Config) (description, error) {
	twin := *cfg
	twin.HiddenSize, twin.VocabSize = 64, 128
	if twin.IsMoE() {
		twin.NumExperts = max(twin.NumExpertsPerTok, 2)
		twin.MoEIntermediateSize, twin.SharedExpertIntermediateSize = 16, 16
	}
	if twin.IntermediateSize > 0 {
		twin.IntermediateSize = 16
	}
	raw, err := twin.MarshalHF()
	if err != nil {
		return description{}, err
	}
	g, m, err := repro.Random(graph.CPU(), raw, 0, alloc.DefaultResourceLimit)
	if err != nil {
		return description{}, err
	}
	return description{kinds: m.LayerKinds(), loaded: g.Allocator().LiveBufferCount()}, nil
}

// Prediction is a model's prediction as the page shows it.
type Prediction struct {
	Text      string `json:"text"`       // the [model], [baseline] and [predict] lines, as --predict-only prints them
	Layers    int    `json:"layers"`     // decoder layers
	GDN       int    `json:"gdn"`        // Gated DeltaNet layers
	Attention int    `json:"attention"`  // full-attention layers
	Experts   int    `json:"experts"`    // routed experts (0: dense)
	Quantized string `json:"quantized"`  // the config's quantization ("" when none)
	Slope     int    `json:"slope"`      // objects/token on the stock path
	Baseline  int    `json:"baseline"`   // live buffers once decoding begins
	Crash     int    `json:"crash"`      // predicted crash token at Limit (0: none)
	Limit     int    `json:"limit"`      // the resource limit predicted for
	RunLimit  int    `json:"run_limit"`  // the playground's lowered limit
	RunCrash  int    `json:"run_crash"`  // the crash token at RunLimit (0: none)
	ModelType string `json:"model_type"` // the config's model_type
}

// Predict predicts s's crash at limit (MLX's 499,000 unless given) and at runLimit.
func Predict(s ModelSpec, limit, runLimit int) (*Prediction, error) {
	cfg, err := s.config()
	if err != nil {
		return nil, err
	}
	d, err := describe(cfg)
	if err != nil {
		return nil, err
	}
	in := predict.Inputs{Kinds: d.kinds, Mode: "batch", WeightBuffers: d.loaded, CacheBuffersPerLayer: runBuffersPerLayer, Limit: limit}
	p := predict.New(in)
	var b bytes.Buffer
	source := "default"
	if limit != alloc.DefaultResourceLimit {
		source = "--limit"
	}
	fmt.Fprintf(&b, "[model] %s: layers=%d (ssm=%d attn=%d) experts=%d hidden=%d; %s buffers after load device=cpu limit=%d (%s)\n",
		cfg.ModelType, cfg.NumLayers, p.GDN, p.Attention, cfg.NumExperts, cfg.HiddenSize, predict.Comma(p.Loaded), limit, source)
	p.WriteBaseline(&b)
	p.WritePredict(&b)
	in.Limit = runLimit
	run := predict.New(in)
	return &Prediction{Text: b.String(), Layers: len(d.kinds), GDN: p.GDN, Attention: p.Attention, Experts: cfg.NumExperts,
		Quantized: quantization(s.Config), Slope: p.Slope, Baseline: p.Baseline, Crash: p.CrashToken, Limit: limit,
		RunLimit: runLimit, RunCrash: run.CrashToken, ModelType: cfg.ModelType}, nil
}
