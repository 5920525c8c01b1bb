//go:build unix

package checkpoint

import "syscall"

// openNoBlock makes opening a FIFO return at once instead of waiting for a writer;
// it changes nothing for a regular file.
const openNoBlock = syscall.O_NONBLOCK
