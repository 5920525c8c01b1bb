//go:build !darwin

package main

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestMetalUnavailableHere: off macOS there is never a Metal device, so --device metal
// exits 69. (On a Mac, metal_darwin_test.go covers both cases.)
func TestMetalUnavailableHere(t *testing.T) {
	var out, errb bytes.Buffer
	code := run([]string{"--device", "metal", "--tokens", "10"}, &out, &errb)
	require.Equal(t, exitNoDev, code, errb.String())
	require.Contains(t, errb.String(), "metal")
}
