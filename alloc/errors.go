package alloc

import (
	"errors"
	"fmt"
)

// ErrNegativeSize is returned (wrapped) by Malloc for a size below zero.
var ErrNegativeSize = errors.New("alloc: negative allocation size")

// ResourceLimitError reports that a cache miss found the buffer count at the
// resource limit, even after dropping the cache and running the reclaimer.
type ResourceLimitError struct {
	Limit int
}

// Error returns MLX's exact message.
func (e *ResourceLimitError) Error() string {
	return fmt.Sprintf("[metal::malloc] Resource limit (%d) exceeded.", e.Limit)
}

// MaxBufferError reports a request larger than the device's largest buffer.
type MaxBufferError struct {
	Size, Max int64
}

// Error returns MLX's exact message.
func (e *MaxBufferError) Error() string {
	return fmt.Sprintf("[metal::malloc] Attempting to allocate %d bytes which is greater than the maximum allowed buffer size of %d bytes.", e.Size, e.Max)
}

// DeviceError reports that the provider refused to create a buffer.
type DeviceError struct {
	Size int64
	Err  error
}

// Error returns MLX's exact message; the cause is available via Unwrap.
func (e *DeviceError) Error() string {
	return fmt.Sprintf("[malloc] Unable to allocate %d bytes.", e.Size)
}

// Unwrap returns the provider's error.
func (e *DeviceError) Unwrap() error { return e.Err }
