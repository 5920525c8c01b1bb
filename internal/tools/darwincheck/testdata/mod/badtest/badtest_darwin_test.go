//go:build darwin

package badtest

import "testing"

func TestTwo(t *testing.T) {
	var s string = Two()
	t.Log(s)
}
