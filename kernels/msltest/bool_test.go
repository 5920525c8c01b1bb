package msltest

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestBoolLoadKeepsLowBit: a bool read from device memory keeps only the byte's low
// bit, so a kernel reading mask bytes other than 0 and 1 as bool differs from the Go
// twins' "non-zero is true" here, as it may on a GPU; reading uchar does not.
func TestBoolLoadKeepsLowBit(t *testing.T) {
	RequireCompiler(t)
	const src = `#include <metal_stdlib>
using namespace metal;
kernel void as_bool(const device bool* m [[buffer(0)]], device int* out [[buffer(1)]],
                    uint i [[thread_position_in_grid]]) { out[i] = m[i] ? 1 : 0; }
kernel void as_uchar(const device uchar* m [[buffer(0)]], device int* out [[buffer(1)]],
                     uint i [[thread_position_in_grid]]) { out[i] = m[i] != 0 ? 1 : 0; }
`
	s, err := OpenSource("bools.metal", src)
	require.NoError(t, err)
	defer s.Close()
	for entry, want := range map[string][]int32{"as_bool": {0, 1, 0, 1}, "as_uchar": {0, 1, 1, 1}} {
		out := make([]byte, 16)
		require.NoError(t, s.Run(entry, Dispatch{Threads: [3]int{4, 1, 1}, Group: [3]int{4, 1, 1}},
			[]Buffer{{Index: 0, Data: []byte{0, 1, 2, 3}}, {Index: 1, Data: out}}))
		got, err := Values[int32](out)
		require.NoError(t, err)
		require.Equal(t, want, got, entry)
	}
}
