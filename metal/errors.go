package metal

import "errors"

// ErrUnavailable is wrapped by Open's error when there is no Metal device:
// on a platform other than macOS, or a Mac without a usable GPU.
var ErrUnavailable = errors.New("metal: no Metal device")
