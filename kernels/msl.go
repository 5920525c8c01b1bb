package kernels

import (
	"bytes"
	"embed"
	"encoding/binary"
	"fmt"
)

// MSL holds the Metal twins: one .metal file per kernel family, compiled by the Metal
// device at first use and run on Linux by the emulation harness in kernels/msltest.
//
//go:embed *.metal
var MSL embed.FS

// Source returns the MSL source of a family.
func Source(family string) (string, error) {
	b, err := MSL.ReadFile(family + ".metal")
	if err != nil {
		return "", fmt.Errorf("kernels: no MSL for family %q: %w", family, err)
	}
	return string(b), nil
}

// Pack lays out a parameter struct for setBytes: v must be a struct (or pointer to one)
// of fixed-size fields (int32, uint32, float32 and arrays of them), in the order and
// alignment of the matching MSL struct (4-byte fields need no padding).
func Pack(v any) []byte {
	var buf bytes.Buffer
	if err := binary.Write(&buf, binary.LittleEndian, v); err != nil {
		panic("kernels: Pack: " + err.Error())
	}
	return buf.Bytes()
}

// MSLLayout is the MSL-side description of one strided argument (matches the
// `Strided` struct the .metal files declare).
type MSLLayout struct {
	NDim    int32
	Offset  int32
	Shape   [MaxDims]int32
	Strides [MaxDims]int32
}

// MSLLayoutOf converts a layout for an MSL parameter block.
func MSLLayoutOf(l *Layout) MSLLayout {
	m := MSLLayout{NDim: int32(l.NDim), Offset: int32(l.Offset)}
	for i := 0; i < l.NDim; i++ {
		m.Shape[i] = int32(l.Shape[i])
		m.Strides[i] = int32(l.Strides[i])
	}
	return m
}

// Groups1D is the usual dispatch of a 1-D elementwise kernel over n threads.
func Groups1D(n int) (grid, group [3]int) {
	g := 256
	if n < g {
		g = max(n, 1)
	}
	return [3]int{max(n, 1), 1, 1}, [3]int{g, 1, 1}
}
