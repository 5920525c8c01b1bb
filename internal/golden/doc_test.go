package golden

import (
	"os"
	"path/filepath"
	"testing"
)

func TestRootDefaultAndOverride(t *testing.T) {
	t.Setenv(EnvVar, "")
	root, err := Root()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "README.md")); err != nil {
		t.Fatalf("default root %s has no README.md: %v", root, err)
	}
	other := t.TempDir()
	t.Setenv(EnvVar, other)
	if got, err := Root(); err != nil || got != other {
		t.Fatalf("Root() = %q, %v; want %q", got, err, other)
	}
	t.Setenv(EnvVar, filepath.Join(other, "missing"))
	if _, err := Root(); err == nil {
		t.Fatal("Root() with a missing override: want an error")
	}
}
