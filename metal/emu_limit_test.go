//go:build !darwin

package metal

import (
	"testing"

	"github.com/ingotml/ingot/kernels/msltest"
)

// TestEveryFamilyAtThreadLimit runs every family's samples on the emulated GPU with a
// pipeline limit of 64 threads per threadgroup (what Metal may give a register-heavy
// kernel) and of 1024 (the most it gives): every Encode must size its threadgroups
// from the pipeline's limit, not from a width fixed in the MSL.
func TestEveryFamilyAtThreadLimit(t *testing.T) {
	for _, limit := range []int{64, 1024} {
		t.Run(map[int]string{64: "limit64", 1024: "limit1024"}[limit], func(t *testing.T) {
			g, b := newEmulatedGPU(t, GPUOptions{}, msltest.OrderForward)
			b.maxThr = limit
			runSamples(t, g, b, nil)
		})
	}
}
