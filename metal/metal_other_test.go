//go:build !darwin

package metal

import (
	"errors"
	"runtime"
	"testing"
)

func TestOpenUnavailable(t *testing.T) {
	d, err := Open()
	if d != nil {
		t.Fatalf("Open returned a device on %s", runtime.GOOS)
	}
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("Open error %v does not wrap ErrUnavailable", err)
	}
	want := "metal: no Metal device: this build is not for macOS (GOOS=" + runtime.GOOS + ")"
	if err.Error() != want {
		t.Fatalf("Open error = %q, want %q", err, want)
	}
	if Available() {
		t.Fatal("Available() = true")
	}
}

func TestDeviceStubs(t *testing.T) {
	var d Device
	if d.Name() != "" || d.MaxBufferLength() != 0 || d.RecommendedWorkingSet() != 0 || d.Provider() != nil {
		t.Fatalf("stub device reports name %q, max buffer %d, working set %d, provider %v",
			d.Name(), d.MaxBufferLength(), d.RecommendedWorkingSet(), d.Provider())
	}
	if got := d.ResourceLimit(); got != DefaultResourceLimit {
		t.Fatalf("ResourceLimit() = %d, want %d", got, DefaultResourceLimit)
	}
}
