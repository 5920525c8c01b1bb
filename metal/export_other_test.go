//go:build !darwin

package metal

import (
	"testing"

	"github.com/ingotml/ingot/kernels/msltest"
)

// NewEmulatedGPU makes a GPU whose Run executes every dispatch on the MSL
// emulator (see emu_test.go), for the tests of packages above metal's.
func NewEmulatedGPU(t testing.TB, opt GPUOptions, order msltest.ThreadOrder) *GPU {
	g, _ := newEmulatedGPU(t, opt, order)
	return g
}

// EmulatedStats is how many dispatches an emulated GPU has run and how many
// of its buffers are live.
func EmulatedStats(g *GPU) (dispatches, liveBuffers int) {
	b := g.r.b.(*emuBackend)
	return b.ranDispatches(), b.prov.liveBuffers()
}
