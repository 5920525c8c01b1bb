// Package golden locates the reference data the tests compare against.
//
// The default root is testdata/golden at the repository root, a copy of the
// transformers reference sets kept in the repository so a fresh clone's tests
// pass. INGOT_GOLDEN_DIR points the same tests at any other root holding sets of
// the same format, under any folder names and with any sizes.
package golden

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
)

// EnvVar names the environment variable that overrides the golden root.
const EnvVar = "INGOT_GOLDEN_DIR"

// Root returns the golden-data root: $INGOT_GOLDEN_DIR if set, else the
// repository's testdata/golden. It fails when the directory does not exist.
func Root() (string, error) {
	dir := os.Getenv(EnvVar)
	if dir == "" {
		dir = filepath.Join(RepoRoot(), "testdata", "golden")
	}
	st, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("golden data root (set %s): %w", EnvVar, err)
	}
	if !st.IsDir() {
		return "", fmt.Errorf("golden data root %s: %w", dir, errors.New("not a directory"))
	}
	return dir, nil
}

// MLXRoot returns the repository's testdata/mlx: data made with real MLX and
// mlx-lm (quantization known answers, an mlx-lm-written checkpoint).
func MLXRoot() string {
	return filepath.Join(RepoRoot(), "testdata", "mlx")
}

// RepoRoot is the repository's root directory, found from this file's path.
func RepoRoot() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "."
	}
	return filepath.Join(filepath.Dir(file), "..", "..")
}
