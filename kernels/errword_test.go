package kernels_test

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/kernels"
)

// TestDeviceErrorDecodes: a zero word is no error; a word names the earliest failing
// launch (inverted position) and the index (word 2), and the kernel's IndexAxis the
// axis; words that name nothing decodable say so instead of panicking.
func TestDeviceErrorDecodes(t *testing.T) {
	word := func(v ...uint32) []byte {
		b := make([]byte, kernels.ErrorWordSize)
		for i, x := range v {
			binary.LittleEndian.PutUint32(b[4*i:], x)
		}
		return b
	}
	take := kernels.Launch{Kernel: kernels.KTake, Params: &kernels.TakeParams{Outer: 1, Axis: 10, Inner: 1, NIdx: 1}}
	mm := kernels.Launch{Kernel: kernels.KGatherMM, Params: &kernels.GatherMMParams{Rows: 1, TopK: 1, Experts: 4, O: 1, K: 1}}
	batch := []kernels.Launch{take, mm}

	require.Nil(t, kernels.DeviceError(word(), batch))
	require.Equal(t, &kernels.LaunchError{Kernel: "take", Msg: "index -11 out of range for an axis of length 10"},
		kernels.DeviceError(word(^uint32(0), ^uint32(0), uint32(0xFFFFFFF5)), batch))
	require.Equal(t, &kernels.LaunchError{Kernel: "gather_mm", Msg: "index 4 out of range for an axis of length 4"},
		kernels.DeviceError(word(^uint32(1), ^uint32(3), 4), batch))
	require.EqualError(t, kernels.DeviceError(word(^uint32(2)), batch),
		"kernels: ?: the error word names launch 2 of a batch of 2")
	require.EqualError(t, kernels.DeviceError(word(1), batch),
		"kernels: ?: the error word names launch 4294967294 of a batch of 2")
	require.EqualError(t, kernels.DeviceError(make([]byte, 8), batch),
		"kernels: ?: error word of 8 bytes; want 16")
	copyK := kernels.Launch{Kernel: kernels.KArange}
	require.EqualError(t, kernels.DeviceError(word(^uint32(0), 0, 5), []kernels.Launch{copyK}),
		"kernels: arange: reported index 5, but the kernel has no index axis")
}
