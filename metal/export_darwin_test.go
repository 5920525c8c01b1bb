//go:build darwin

package metal

// LiveMTLBuffers is the number of MTLBuffers g's provider holds, for the
// external tests.
func LiveMTLBuffers(g *GPU) int {
	n, _ := g.dev.provider.counts()
	return n
}
