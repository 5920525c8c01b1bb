//go:build !darwin

package metal_test

import (
	"testing"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/kernels/msltest"
	"github.com/ingotml/ingot/metal"
)

// TestGoldenModelsOnEmulatedMetal runs every golden model through metal.GPU.Run on the
// executing backend (every launch encoded by the Go code a Mac runs, every dispatch run
// by the emulated MSL) and through the CPU device: prefill logits, then greedy decode
// steps with the cache, must agree within the twins' float32 tolerance, token for token.
func TestGoldenModelsOnEmulatedMetal(t *testing.T) {
	compareGolden(t, func(t *testing.T) graph.Device {
		return metal.NewEmulatedGPU(t, metal.GPUOptions{}, msltest.OrderForward)
	})
}
