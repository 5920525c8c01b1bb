//go:build darwin

// Package good uses macdriver's Metal bindings correctly; darwincheck must
// report nothing here.
package good

/*
#cgo LDFLAGS: -framework Metal
void *probeDevice(void);
*/
import "C"

import (
	"unsafe"

	"github.com/progrium/macdriver/macos/metal"
	"github.com/progrium/macdriver/objc"
)

// Fill makes a shared buffer of n bytes and sets every byte to v.
func Fill(n int, v byte) []byte {
	dev := metal.DeviceWrapper{Object: objc.ObjectFrom(unsafe.Pointer(C.probeDevice()))}
	buf := objc.Call[metal.BufferWrapper](dev, objc.Sel("newBufferWithLength:options:"),
		uint(n), metal.ResourceStorageModeShared|metal.ResourceHazardTrackingModeUntracked)
	data := unsafe.Slice((*byte)(buf.Contents()), buf.Length())
	for i := range data {
		data[i] = v
	}
	return data
}
