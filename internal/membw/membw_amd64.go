package membw

// readSum reads every byte of b (len a multiple of 128) and returns a value that
// depends on all of them.
func readSum(b []byte) uint64 {
	if len(b) < 128 {
		return 0
	}
	return readAVX2(&b[0], len(b)/128)
}

// readAVX2 streams n 128-byte blocks at p with 256-bit loads.
//
//go:noescape
func readAVX2(p *byte, n int) uint64
