package nn

import (
	"errors"
	"fmt"

	"github.com/ingotml/ingot/nn/checkpoint"
)

// ErrShape is wrapped by a WeightError for a tensor whose shape the config rules out.
var ErrShape = errors.New("wrong shape")

// WeightError reports a checkpoint tensor a model cannot use: missing, misshapen or of
// an unsupported dtype. Err is checkpoint.ErrTensorNotFound, ErrShape or
// checkpoint.ErrDTypeMismatch; Model names the family that read it.
type WeightError struct {
	Model  string
	File   string
	Tensor string
	Reason string
	Err    error
}

// Error formats the error as "<model>: <file>: tensor <name>: <reason>".
func (e *WeightError) Error() string {
	// Names come from the file: escaped before they reach a terminal.
	return checkpoint.Printable(fmt.Sprintf("%s: %s: tensor %s: %s", e.Model, e.File, e.Tensor, e.Reason))
}

// Unwrap returns the sentinel that classifies the error.
func (e *WeightError) Unwrap() error { return e.Err }
