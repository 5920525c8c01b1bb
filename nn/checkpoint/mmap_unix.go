//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package checkpoint

import (
	"fmt"
	"math"
	"os"
	"syscall"
)

// mapFile maps the first size bytes of f read-only and returns the mapping and the
// function that unmaps it. Pages are read from the file only when touched.
func mapFile(f *os.File, size int64) ([]byte, func() error, error) {
	if size <= 0 || size > math.MaxInt {
		return nil, nil, fmt.Errorf("cannot map %d bytes", size)
	}
	b, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return b, func() error { return syscall.Munmap(b) }, nil
}
