//go:build darwin

// Package bad calls a method that macdriver's metal.DeviceWrapper lacks.
package bad

import "github.com/progrium/macdriver/macos/metal"

// Length asks the device for a buffer through a method that does not exist.
func Length(dev metal.DeviceWrapper) uint {
	return dev.NewBufferWithLength(16).Length()
}
