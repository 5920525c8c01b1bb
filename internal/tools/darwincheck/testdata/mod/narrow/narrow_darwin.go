//go:build darwin

// Package narrow reads BOOL results through libffi into narrow Go values, as the
// metal package once did, and once the safe way.
package narrow

import (
	"github.com/progrium/macdriver/macos/metal"
	"github.com/progrium/macdriver/objc"
)

// Responds is the old mistake: a 1-byte bool for libffi's 8-byte result.
func Responds(o objc.Object) bool {
	return objc.Call[bool](o, objc.Sel("respondsToSelector:"), objc.Sel("setMathMode:"))
}

// Family goes through a generated wrapper, which calls objc.Call[bool] itself.
func Family(d metal.DeviceWrapper) bool {
	return d.SupportsFamily(metal.GPUFamilyApple7)
}

// Width is a 64-bit result: fine.
func Width(o objc.Object) uint64 {
	return objc.Call[uint64](o, objc.Sel("threadExecutionWidth"))
}

// Safe reads the BOOL through cgo.
func Safe(o objc.Object) bool {
	return o.RespondsToSelector(objc.Sel("setMathMode:")) && o.IsNil()
}
