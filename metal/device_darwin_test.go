//go:build darwin

package metal

import (
	"errors"
	"os"
	"testing"
)

// openOrSkip returns the default device, skipping the test on a Mac without
// one (a CI virtual machine, say).
func openOrSkip(t *testing.T) *Device {
	t.Helper()
	d, err := Open()
	if errors.Is(err, ErrUnavailable) {
		skipOrFail(t, err)
	}
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// skipOrFail skips a test that needs a Metal device, or fails it where RequireEnv
// says the device must be there (the macOS CI job).
func skipOrFail(t *testing.T, err error) {
	t.Helper()
	if Required() {
		t.Fatalf("%s is set, and Metal is unavailable: %v", RequireEnv, err)
	}
	t.Skipf("skipping: no Metal device on this Mac: %v", err)
}

func TestOpen(t *testing.T) {
	d := openOrSkip(t)
	if again, err := Open(); err != nil || again != d {
		t.Fatalf("second Open = %p, %v; want the same device %p", again, err, d)
	}
	if !Available() {
		t.Fatal("Available() = false after a successful Open")
	}
	if d.Name() == "" {
		t.Fatal("device has no name")
	}
	if d.MaxBufferLength() < 1<<28 {
		t.Fatalf("MaxBufferLength() = %d, want at least 256 MiB", d.MaxBufferLength())
	}
	if d.RecommendedWorkingSet() < 1<<30 {
		t.Fatalf("RecommendedWorkingSet() = %d, want at least 1 GiB", d.RecommendedWorkingSet())
	}
	v, ok := sysctlInt("iogpu.rsrc_limit")
	if want := resourceLimitFrom(v, ok); d.ResourceLimit() != want {
		t.Fatalf("ResourceLimit() = %d; iogpu.rsrc_limit reads %d (present %v), so want %d", d.ResourceLimit(), v, ok, want)
	}
	t.Logf("%s: max buffer %d, working set %d, resource limit %d (iogpu.rsrc_limit %d, present %v)",
		d.Name(), d.MaxBufferLength(), d.RecommendedWorkingSet(), d.ResourceLimit(), v, ok)
	if p := d.Provider(); p == nil || p.Name() != "metal" || p.MaxBufferLength() != d.MaxBufferLength() ||
		p.RecommendedWorkingSet() != d.RecommendedWorkingSet() {
		t.Fatalf("provider %v does not describe the device", p)
	}
}

func TestSysctlInt(t *testing.T) {
	// A sysctl every Mac has, with a value Go knows independently.
	v, ok := sysctlInt("hw.pagesize")
	if !ok || v != int64(os.Getpagesize()) {
		t.Fatalf("hw.pagesize = %d (ok %v), want %d", v, ok, os.Getpagesize())
	}
	if v, ok := sysctlInt("ingot.no.such.sysctl"); ok {
		t.Fatalf("a missing sysctl read as %d", v)
	}
}
