//go:build !amd64

package membw

import "encoding/binary"

// readSum reads every byte of b and returns a value that depends on all of them.
func readSum(b []byte) uint64 {
	var s uint64
	for i := 0; i+8 <= len(b); i += 8 {
		s ^= binary.LittleEndian.Uint64(b[i:])
	}
	return s
}

// hasAVX512 is false off amd64: FMAProbe reports 0.
const hasAVX512 = false

func fmaRounds(n int) {}
