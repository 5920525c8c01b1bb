//go:build unix

package msltest

import (
	"io/fs"
	"syscall"
)

// ownerOf is the uid owning a file.
func ownerOf(st fs.FileInfo) (int, bool) {
	s, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return int(s.Uid), true
}
