// Package models maps a checkpoint's model_type to the package that builds it, so
// loading a directory picks the model from its config.json.
//
// The registry sits above the model packages and imports them (cmd -> generate ->
// nn/models -> nn/<family> -> nn): model packages stay free of any registry
// dependency and of init-time side effects, and the table below is the one place that
// lists what the engine can run. Adding a model is one package (nn/<family>) plus one
// line in registry.
package models

import (
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/checkpoint"
	"github.com/ingotml/ingot/nn/qwen35"
)

// Options choose between equivalent implementations of a model's ops.
type Options struct {
	// OpsGatedDelta runs recurrences as compositions of tensor ops instead of fused
	// kernels (models without a recurrence ignore it).
	OpsGatedDelta bool
}

// Constructor builds the models of one model_type.
type Constructor struct {
	// Load reads a checkpoint directory (config.json and its weights).
	Load func(dir string, g *graph.Graph, opt Options) (nn.Model, error)
	// LoadCheckpoint builds the model from a checkpoint already open (its config and
	// headers parsed once, by the caller, who closes it).
	LoadCheckpoint func(ck *checkpoint.Checkpoint, g *graph.Graph, opt Options) (nn.Model, error)
	// Random builds the model config.json data describes with deterministic random
	// weights drawn from seed.
	Random func(config []byte, g *graph.Graph, seed int64, opt Options) (nn.Model, error)
}

// registry maps model_type (top level, or text_config's when the file nests one) to
// its constructor.
var registry = map[string]Constructor{
	qwen35.TypeQwen35:        qwen35Family,
	qwen35.TypeQwen35Text:    qwen35Family,
	qwen35.TypeQwen35MoE:     qwen35Family,
	qwen35.TypeQwen35MoEText: qwen35Family,
	qwen35.TypeQwen3Next:     qwen35Family, // Qwen3.5's ancestor: the same layers
}

var qwen35Family = Constructor{
	Load: func(dir string, g *graph.Graph, opt Options) (nn.Model, error) {
		return qwen35.Load(dir, g, qwen35.Options{OpsGatedDelta: opt.OpsGatedDelta})
	},
	LoadCheckpoint: func(ck *checkpoint.Checkpoint, g *graph.Graph, opt Options) (nn.Model, error) {
		return qwen35.LoadCheckpoint(ck, g, qwen35.Options{OpsGatedDelta: opt.OpsGatedDelta})
	},
	Random: func(config []byte, g *graph.Graph, seed int64, opt Options) (nn.Model, error) {
		cfg, err := qwen35.ParseHFConfig(config)
		if err != nil {
			return nil, err
		}
		return qwen35.NewRandom(cfg, g, seed, qwen35.Options{OpsGatedDelta: opt.OpsGatedDelta})
	},
}

// ErrUnknownModelType is wrapped by the error for a model_type no package builds.
var ErrUnknownModelType = errors.New("unknown model type")

// Types returns the registered model types, sorted.
func Types() []string {
	out := make([]string, 0, len(registry))
	for t := range registry {
		out = append(out, t)
	}
	slices.Sort(out)
	return out
}

// ModelType returns the model_type of config.json data: text_config's when the file
// nests one (a multimodal checkpoint's text model), else the top level's.
func ModelType(config []byte) (string, error) {
	var top struct {
		ModelType  string `json:"model_type"`
		TextConfig *struct {
			ModelType string `json:"model_type"`
		} `json:"text_config"`
	}
	if err := json.Unmarshal(config, &top); err != nil {
		return "", fmt.Errorf("models: config.json: %w", err)
	}
	if top.TextConfig != nil && top.TextConfig.ModelType != "" {
		return top.TextConfig.ModelType, nil
	}
	if top.ModelType == "" {
		return "", fmt.Errorf("models: config.json has no model_type: %w", ErrUnknownModelType)
	}
	return top.ModelType, nil
}

// lookup returns the constructor for config.json data.
func lookup(config []byte) (Constructor, error) {
	t, err := ModelType(config)
	if err != nil {
		return Constructor{}, err
	}
	c, ok := registry[t]
	if !ok {
		return Constructor{}, fmt.Errorf("models: %w %q (known: %s)", ErrUnknownModelType, t, strings.Join(Types(), ", "))
	}
	return c, nil
}

// Load reads the checkpoint in dir with the package its config.json's model_type names.
func Load(dir string, g *graph.Graph, opt Options) (nn.Model, error) {
	path := filepath.Join(dir, "config.json")
	data, err := checkpoint.ReadMetadataFile(path)
	if err != nil {
		return nil, fmt.Errorf("models: %w", err)
	}
	c, err := lookup(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// The weight files are mapped and the load copies from them: a file that shrinks
	// meanwhile becomes an error naming it, not SIGBUS (see checkpoint.CatchFault).
	var m nn.Model
	err = checkpoint.CatchFault(func() error {
		var err error
		m, err = c.Load(dir, g, opt)
		return err
	})
	return m, err
}

// LoadCheckpoint builds the model of the open checkpoint ck with the package its
// config.json's model_type names, reading nothing from its directory again: a caller
// that has inspected the headers (decode) loads without parsing them twice. ck stays
// open; the caller closes it.
func LoadCheckpoint(ck *checkpoint.Checkpoint, g *graph.Graph, opt Options) (nn.Model, error) {
	c, err := lookup(ck.Config)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(ck.Dir, "config.json"), err)
	}
	var m nn.Model
	err = checkpoint.CatchFault(func() error { // see Load
		var err error
		m, err = c.LoadCheckpoint(ck, g, opt)
		return err
	})
	return m, err
}

// Random builds the model config.json data describes, with random weights from seed.
func Random(config []byte, g *graph.Graph, seed int64, opt Options) (nn.Model, error) {
	c, err := lookup(config)
	if err != nil {
		return nil, err
	}
	return c.Random(config, g, seed, opt)
}
