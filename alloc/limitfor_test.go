package alloc

import (
	"errors"
	"os"
	"testing"
)

// TestResourceLimitFor: explicit, then the environment, then the device, then the
// default; a set but bad environment value is an error naming it.
func TestResourceLimitFor(t *testing.T) {
	for _, c := range []struct {
		env              string
		set              bool
		explicit, device int
		want             int
		bad              bool
	}{
		{explicit: 0, device: 0, want: DefaultResourceLimit},
		{device: 7000, want: 7000},
		{explicit: 50, device: 7000, want: 50},
		{env: "1234", set: true, device: 7000, want: 1234},
		{env: "1234", set: true, explicit: 9, want: 9},
		{env: "lots", set: true, bad: true},
		{env: "0", set: true, bad: true},
		{env: "-5", set: true, bad: true},
		{env: "", set: true, bad: true},
		{env: "lots", set: true, explicit: 9, want: 9}, // the flag wins; env unread
	} {
		if c.set {
			t.Setenv(ResourceLimitEnv, c.env)
		} else {
			t.Setenv(ResourceLimitEnv, "") // restores the variable afterwards
			os.Unsetenv(ResourceLimitEnv)
		}
		got, err := ResourceLimitFor(c.explicit, c.device)
		var le *LimitEnvError
		switch {
		case c.bad && !errors.As(err, &le):
			t.Errorf("%+v: got %d, %v; want a *LimitEnvError", c, got, err)
		case c.bad && err.Error() != `INGOT_RESOURCE_LIMIT="`+c.env+`": want a positive integer (buffer objects)`:
			t.Errorf("%+v: message %q", c, err)
		case !c.bad && (err != nil || got != c.want):
			t.Errorf("%+v: got %d, %v; want %d", c, got, err, c.want)
		}
	}
}
