package golden

import (
	"os"
	"path/filepath"
	"testing"
)

func TestSetsFindsAnyFolderName(t *testing.T) {
	root := t.TempDir()
	for _, d := range []string{"b_set", "a_set", "not_a_set"} {
		if err := os.Mkdir(filepath.Join(root, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, d := range []string{"a_set", "b_set"} {
		if err := os.WriteFile(filepath.Join(root, d, "manifest.json"), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv(EnvVar, root)
	got, err := Sets()
	if err != nil || len(got) != 2 || got[0] != filepath.Join(root, "a_set") || got[1] != filepath.Join(root, "b_set") {
		t.Fatalf("Sets() = %v, %v", got, err)
	}
	t.Setenv(EnvVar, t.TempDir())
	if _, err := Sets(); err == nil {
		t.Fatal("Sets() with no set: want an error")
	}
}
