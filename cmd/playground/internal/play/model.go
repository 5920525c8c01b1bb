package play

import (
	"bytes"
	"encoding/json"
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

// The random model's shape is bounded as cmd/decode's flags bound it.
const (
	maxLayers  = 4096
	maxExperts = 512
	maxHidden  = 4096
)

// check refuses a random model's shape outside cmd/decode's flag ranges (0 takes the
// repro's default), so that no shape drives a huge build.
func (s ModelSpec) check() error {
	switch {
	case s.Layers < 0 || s.Layers > maxLayers:
		return fmt.Errorf("layers must be in 1..%d, not %d", maxLayers, s.Layers)
	case s.Interval < 0 || s.Interval > maxLayers:
		return fmt.Errorf("interval must be in 0..%d, not %d", maxLayers, s.Interval)
	case s.Experts < 0 || s.Experts > maxExperts:
		return fmt.Errorf("experts must be in 2..%d, not %d", maxExperts, s.Experts)
	case s.Hidden < 0 || s.Hidden > maxHidden || s.Hidden%16 != 0:
		return fmt.Errorf("hidden must be a multiple of 16 in 16..%d, not %d", maxHidden, s.Hidden)
	}
	return nil
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
		if n := configLayers(s.Config); n > maxLayers {
			// Describing 65,536 layers alone takes seconds in a browser, where a Stop
			// is not read meanwhile: the page keeps decode's --layers range.
			return nil, fmt.Errorf("config.json: num_hidden_layers %d: the playground takes at most %d layers (decode --config takes the file as it is)", n, maxLayers)
		}
		return cfg, nil
	}
	if err := s.check(); err != nil {
		return nil, err
	}
	return models.ReproConfig(nn.ReproOptions{ModelType: s.ModelType, Layers: s.Layers, Interval: s.Interval,
		Experts: s.Experts, Hidden: s.Hidden, AttentionOnly: s.AttentionOnly})
}

// configLayers is config.json's num_hidden_layers (text_config's when nested; 0 when
// the file does not say). The parser has validated it.
func configLayers(config string) int {
	var top struct {
		Layers int `json:"num_hidden_layers"`
		Text   struct {
			Layers int `json:"num_hidden_layers"`
		} `json:"text_config"`
	}
	json.Unmarshal([]byte(config), &top)
	return max(top.Layers, top.Text.Layers)
}

// Types are the model types the page offers: every registered one.
func Types() []string { return models.Types() }

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
	if limit < 1 || runLimit < 1 {
		return nil, fmt.Errorf("the limit must be at least 1, not %d", min(limit, runLimit))
	}
	p := predict.Describe(d, "batch", limit)
	source := "default"
	if limit != alloc.DefaultResourceLimit {
		source = "--limit"
	}
	run := predict.Describe(d, "batch", runLimit)
	// A limit below the baseline crashes before the first token: no crash token.
	if err := p.CheckBaseline("the limit"); err != nil {
		return nil, err
	}
	if err := run.CheckBaseline("the run's limit"); err != nil {
		return nil, err
	}
	var b bytes.Buffer
	p.WriteRandomModel(&b, d, "cpu", source)
	p.WriteBaseline(&b)
	p.WritePredict(&b)
	return &Prediction{Text: b.String(), Layers: d.Layers(), GDN: p.GDN, Attention: p.Attention, Experts: d.Experts,
		Quantized: quantization(s.Config), Slope: p.Slope, Baseline: p.Baseline, Crash: p.CrashToken, Limit: limit,
		RunLimit: runLimit, RunCrash: run.CrashToken, ModelType: d.ModelType}, nil
}
