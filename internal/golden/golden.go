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

// Sets returns the golden sets under Root, whatever their folder names: every
// directory holding a manifest.json (the set format's index), in name order. It fails
// when there is none.
func Sets() ([]string, error) {
	root, err := Root()
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, fmt.Errorf("golden sets: %w", err)
	}
	var dirs []string
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		if _, err := os.Stat(filepath.Join(dir, "manifest.json")); e.IsDir() && err == nil {
			dirs = append(dirs, dir)
		}
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("golden sets: no folder with a manifest.json under %s", root)
	}
	return dirs, nil
}
