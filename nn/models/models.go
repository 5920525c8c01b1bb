// Package models maps a checkpoint's model_type to the package that builds it, so
// loading a directory picks the model from its config.json, and gives the commands
// everything they need about a model without naming its package: its configuration
// (parsed, or the repro's random one), its description (every parameter, constant and
// cache buffer: nn.Description), a random build and a checkpoint load.
//
// The registry sits above the model packages and imports them (cmd -> generate ->
// nn/models -> nn/<family> -> nn): model packages stay free of any registry
// dependency and of init-time side effects, and the table in registry.go is the one
// place that lists what the engine can run. Adding a model is one package
// (nn/<family>) plus its lines there.
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
)

// Config is one model family's parsed configuration.
type Config interface {
	// Describe returns what the random model of this configuration is made of.
	Describe() (*nn.Description, error)
	// Random builds the model with deterministic random weights drawn from seed.
	Random(g *graph.Graph, seed int64, opt nn.Options) (nn.Model, error)
	// JSON returns the configuration as a Hugging Face config.json would hold it.
	JSON() ([]byte, error)
	// RandomCheckpoint returns the tensors of a Hugging Face checkpoint of this
	// structure holding Random's weights for seed, stored as dt (F32, F16 or BF16).
	RandomCheckpoint(seed int64, dt checkpoint.DType) ([]checkpoint.WriteTensor, error)
	// Resize returns a validated copy with the hidden size and the routed expert count
	// changed (0 keeps either); experts on a dense model wrap ErrDense.
	Resize(hidden, experts int) (Config, error)
}

// Family is what a model package gives the registry.
type Family struct {
	// Parse reads config.json data (Hugging Face's rules).
	Parse func(config []byte) (Config, error)
	// Repro returns the leak repro's random model of the options' model type.
	Repro func(o nn.ReproOptions) (Config, error)
	// Load builds the model from a checkpoint already open (its config.json and headers
	// parsed once, by the caller, who closes it).
	Load func(ck *checkpoint.Checkpoint, g *graph.Graph, opt nn.Options) (nn.Model, error)
	// Inspect checks an open checkpoint exactly as Load would, from config.json and the
	// safetensors headers alone, and describes the model it holds.
	Inspect func(ck *checkpoint.Checkpoint) (*nn.Description, error)
	// MLXLayout returns a float checkpoint's tensors as mlx-lm's sanitize leaves them
	// before it quantizes (what cmd/quantize writes).
	MLXLayout func(ck *checkpoint.Checkpoint) ([]checkpoint.WriteTensor, error)
}

// ErrUnknownModelType is wrapped by the error for a model_type no package builds.
var ErrUnknownModelType = errors.New("unknown model type")

// ErrDense is wrapped by the error for an expert count given to a dense model.
var ErrDense = errors.New("describes a dense model")

// DefaultType is the repro's model type when none is given.
const DefaultType = "qwen3_5_moe"

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

// family returns the family of a model type.
func family(t string) (Family, error) {
	f, ok := registry[t]
	if !ok {
		return Family{}, fmt.Errorf("%w %s (known: %s)", ErrUnknownModelType, checkpoint.QuoteShort(t), strings.Join(Types(), ", "))
	}
	return f, nil
}

// lookup returns the family config.json data names.
func lookup(config []byte) (Family, error) {
	t, err := ModelType(config)
	if err != nil {
		return Family{}, err
	}
	return family(t)
}

// ParseConfig parses config.json data with the package its model_type names.
func ParseConfig(config []byte) (Config, error) {
	f, err := lookup(config)
	if err != nil {
		return nil, err
	}
	return f.Parse(config)
}

// ReproConfig returns the leak repro's random model of o.ModelType (DefaultType when
// empty).
func ReproConfig(o nn.ReproOptions) (Config, error) {
	if o.ModelType == "" {
		o.ModelType = DefaultType
	}
	f, err := family(o.ModelType)
	if err != nil {
		return nil, err
	}
	return f.Repro(o)
}

// Open opens the checkpoint in dir (config.json and every weight file's header, parsed
// once) and checks that a registered family builds its model_type. The caller closes it.
func Open(dir string) (*checkpoint.Checkpoint, error) {
	data, err := checkpoint.ReadConfig(dir)
	if err != nil {
		return nil, err
	}
	if _, err := lookup(data); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "config.json"), err)
	}
	return checkpoint.OpenCheckpoint(dir)
}

// Load reads the checkpoint in dir with the package its config.json's model_type names.
func Load(dir string, g *graph.Graph, opt nn.Options) (nn.Model, error) {
	ck, err := Open(dir)
	if err != nil {
		return nil, err
	}
	defer ck.Close() // weights used in place keep their mapping pinned
	return LoadCheckpoint(ck, g, opt)
}

// LoadCheckpoint builds the model of the open checkpoint ck, reading nothing from its
// directory again: a caller that has inspected the headers (decode) loads without
// parsing them twice. ck stays open; the caller closes it.
func LoadCheckpoint(ck *checkpoint.Checkpoint, g *graph.Graph, opt nn.Options) (nn.Model, error) {
	f, err := lookup(ck.Config)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(ck.Dir, "config.json"), err)
	}
	// The weight files are mapped and the load copies some tensors from them: a file
	// that shrinks meanwhile becomes an error naming it, not SIGBUS (see
	// checkpoint.CatchFault; weights used in place fault later, in the kernels:
	// graph.ErrMemoryFault).
	var m nn.Model
	err = checkpoint.CatchFault(func() error {
		var err error
		m, err = f.Load(ck, g, opt)
		return err
	})
	return m, err
}

// Inspect checks the checkpoint in dir as Load would, reading headers only, and
// describes the model it holds.
func Inspect(dir string) (*nn.Description, error) {
	ck, err := Open(dir)
	if err != nil {
		return nil, err
	}
	defer ck.Close()
	return InspectCheckpoint(ck)
}

// InspectCheckpoint is Inspect of a checkpoint already open (ck stays open).
func InspectCheckpoint(ck *checkpoint.Checkpoint) (*nn.Description, error) {
	f, err := lookup(ck.Config)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(ck.Dir, "config.json"), err)
	}
	return f.Inspect(ck)
}

// Random builds the model config.json data describes, with random weights from seed.
func Random(config []byte, g *graph.Graph, seed int64, opt nn.Options) (nn.Model, error) {
	c, err := ParseConfig(config)
	if err != nil {
		return nil, err
	}
	return c.Random(g, seed, opt)
}

// MLXLayout returns ck's tensors in mlx-lm's layout, by the family its config.json's
// model_type names (see Family.MLXLayout).
func MLXLayout(ck *checkpoint.Checkpoint) ([]checkpoint.WriteTensor, error) {
	f, err := lookup(ck.Config)
	if err != nil {
		return nil, err
	}
	return f.MLXLayout(ck)
}
