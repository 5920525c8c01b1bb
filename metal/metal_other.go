//go:build !darwin

package metal

import (
	"fmt"
	"runtime"

	"github.com/ingotml/ingot/alloc"
)

// Device is a Metal GPU. On this platform none can be opened; the type and
// its methods exist so that callers compile everywhere.
type Device struct{}

// Available reports whether Open can succeed: never on this platform.
func Available() bool { return false }

// Open returns the system's default Metal device. On this platform it always
// fails with an error wrapping ErrUnavailable.
func Open() (*Device, error) {
	return nil, fmt.Errorf("%w: this build is not for macOS (GOOS=%s)", ErrUnavailable, runtime.GOOS)
}

// Name is the device's name; empty on this platform.
func (d *Device) Name() string { return "" }

// MaxBufferLength is the largest buffer the device accepts; 0 on this platform.
func (d *Device) MaxBufferLength() int64 { return 0 }

// RecommendedWorkingSet is the device's working-set budget in bytes; 0 on
// this platform.
func (d *Device) RecommendedWorkingSet() int64 { return 0 }

// ResourceLimit is the most buffer objects that may be live at once.
func (d *Device) ResourceLimit() int { return DefaultResourceLimit }

// SmallHeapBytes is the memory of the small-buffer heap; 0 on this platform.
func (d *Device) SmallHeapBytes() int64 { return 0 }

// Provider makes the device's buffers; nil on this platform.
func (d *Device) Provider() alloc.Provider { return nil }
