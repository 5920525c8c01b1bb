package metal

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestResourceLimitFrom(t *testing.T) {
	for _, tc := range []struct {
		v    int64
		ok   bool
		want int
	}{
		{0, true, 499000},       // current macOS: present but 0
		{0, false, 499000},      // absent
		{-1, true, 499000},      // nonsense reading
		{123456, false, 499000}, // a value from a failed read is ignored
		{123456, true, 123456},
		{1 << 40, true, 1 << 40},
	} {
		if got := resourceLimitFrom(tc.v, tc.ok); got != tc.want {
			t.Errorf("resourceLimitFrom(%d, %v) = %d, want %d", tc.v, tc.ok, got, tc.want)
		}
	}
}

func TestCheckMacOS(t *testing.T) {
	require.NoError(t, checkMacOS(14))
	require.NoError(t, checkMacOS(15))
	err := checkMacOS(13)
	require.EqualError(t, err, "metal: no Metal device: macOS 14 or later is needed (the kernels are MSL 3.1); this is macOS 13")
	require.ErrorIs(t, err, ErrUnavailable)
}

func TestHeapsUsable(t *testing.T) {
	require.True(t, heapsUsable("Apple M2 Max"))
	require.False(t, heapsUsable("Apple Paravirtual device"))
}
