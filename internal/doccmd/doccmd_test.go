package doccmd

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestFind(t *testing.T) {
	root := t.TempDir()
	page := "# x\n\n    go run ./cmd/decode --tokens 3000 --plot 'a b.svg'   # a comment\n" +
		"$ ./decode --model /m --prompt \"hi there\" 2>/dev/null\n" +
		"go build -o decode ./cmd/decode && ./decode --tokens 3000; echo $?\n" +
		"go run ./cmd/decoder --x\n`go run ./cmd/decode --compare | tail`\n"
	if err := os.WriteFile(filepath.Join(root, "README.md"), []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := Find(root, "decode")
	if err != nil {
		t.Fatal(err)
	}
	want := []Command{
		{"README.md", 3, []string{"--tokens", "3000", "--plot", "a b.svg"}},
		{"README.md", 4, []string{"--model", "/m", "--prompt", "hi there"}},
		{"README.md", 5, []string{"--tokens", "3000"}},
		{"README.md", 7, []string{"--compare"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
}
