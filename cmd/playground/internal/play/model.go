package play

import (
	"bytes"
	"fmt"
	"strings"

	"github.com/ingotml/ingot/alloc"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/models"
	"github.com/ingotml/ingot/predict"
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

// config is the model s chooses, as cmd/decode's modelConfig makes it: the repro's
// random model of a type and shape, or a config.json's structure, through the model
// registry (nn/models).
func (s ModelSpec) config() (models.Config, error) {
	if strings.TrimSpace(s.Config) != "" {
		cfg, err := models.ParseConfig([]byte(s.Config))
		if err != nil {
			return nil, fmt.Errorf("config.json: %w", err)
		}
		return cfg, nil
	}
	return models.ReproConfig(nn.ReproOptions{ModelType: s.ModelType, Layers: s.Layers, Interval: s.Interval,
		Experts: s.Experts, Hidden: s.Hidden, AttentionOnly: s.AttentionOnly})
}

// describe is the description of the model s chooses (what --predict-only reads).
func (s ModelSpec) describe() (*nn.Description, error) {
	cfg, err := s.config()
	if err != nil {
		return nil, err
	}
	return cfg.Describe()
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
	d, err := s.describe()
	if err != nil {
		return nil, err
	}
	p := predict.Describe(d, "batch", limit)
	var b bytes.Buffer
	source := "default"
	if limit != alloc.DefaultResourceLimit {
		source = "--limit"
	}
	p.WriteRandomModel(&b, d, "cpu", source)
	p.WriteBaseline(&b)
	p.WritePredict(&b)
	run := predict.Describe(d, "batch", runLimit)
	return &Prediction{Text: b.String(), Layers: d.Layers(), GDN: p.GDN, Attention: p.Attention, Experts: d.Experts,
		Quantized: quantization(s.Config), Slope: p.Slope, Baseline: p.Baseline, Crash: p.CrashToken, Limit: limit,
		RunLimit: runLimit, RunCrash: run.CrashToken, ModelType: d.ModelType}, nil
}
