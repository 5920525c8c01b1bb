//go:build darwin

package good

import "testing"

func TestFill(t *testing.T) {
	if got := Fill(4, 7); len(got) != 4 {
		t.Fatalf("len = %d", len(got))
	}
}
