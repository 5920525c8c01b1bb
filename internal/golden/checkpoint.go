package golden

import "github.com/ingotml/ingot/nn/checkpoint"

// WithCheckpoint opens the checkpoint in dir, runs f on it and closes it: what
// nn/models' Load and Inspect do around a family's LoadCheckpoint and
// InspectCheckpoint, for a model package's own tests, which cannot import the
// registry (it imports them).
func WithCheckpoint[T any](dir string, f func(ck *checkpoint.Checkpoint) (T, error)) (T, error) {
	ck, err := checkpoint.OpenCheckpoint(dir)
	if err != nil {
		var zero T
		return zero, err
	}
	defer ck.Close() // weights used in place keep their mapping pinned
	return f(ck)
}
