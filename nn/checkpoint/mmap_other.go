//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package checkpoint

import (
	"errors"
	"os"
)

// mapFile is unavailable here: ReadSafetensors falls back to reading each tensor's
// byte range from the open file.
func mapFile(*os.File, int64) ([]byte, func() error, error) {
	return nil, nil, errors.New("memory mapping not supported on this platform")
}
