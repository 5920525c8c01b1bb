package metal

import "testing"

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
