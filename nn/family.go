package nn

import (
	"errors"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn/checkpoint"
)

// ErrDense is wrapped by the error for an expert count given to a dense model.
var ErrDense = errors.New("describes a dense model")

// Family is what a model package gives the registry (nn/models), C being its config
// type and M its model: the package exports one Family value naming its functions and
// the registry adapts it with one line per model_type, so the registry holds no code of
// any family.
type Family[C any, M Model] struct {
	// Parse reads config.json data (Hugging Face's rules) and validates it.
	Parse func(config []byte) (*C, error)
	// Repro returns the leak repro's random model of the options' model type.
	Repro func(o ReproOptions) (*C, error)
	// Describe returns what the random model of a configuration is made of.
	Describe func(c *C) (*Description, error)
	// Random builds the model with deterministic random weights drawn from seed.
	Random func(c *C, g *graph.Graph, seed int64, opt Options) (M, error)
	// RandomCheckpoint returns the tensors of a Hugging Face checkpoint holding
	// Random's weights for seed, stored as dt (F32, F16 or BF16).
	RandomCheckpoint func(c *C, seed int64, dt checkpoint.DType) ([]checkpoint.WriteTensor, error)
	// JSON returns the configuration as a Hugging Face config.json would hold it.
	JSON func(c *C) ([]byte, error)
	// Resize returns a validated copy with the hidden size and the routed expert count
	// changed (0 keeps either); experts on a dense model wrap ErrDense.
	Resize func(c *C, hidden, experts int) (*C, error)
	// Load builds the model from a checkpoint already open (its config.json and
	// headers parsed once, by the caller, who closes it).
	Load func(ck *checkpoint.Checkpoint, g *graph.Graph, opt Options) (M, error)
	// Inspect checks an open checkpoint exactly as Load would, from config.json and the
	// safetensors headers alone, and describes the model it holds.
	Inspect func(ck *checkpoint.Checkpoint) (*Description, error)
	// MLXLayout returns a float checkpoint's tensors as mlx-lm's sanitize leaves them
	// before it quantizes (what cmd/quantize writes).
	MLXLayout func(ck *checkpoint.Checkpoint) ([]checkpoint.WriteTensor, error)
}
