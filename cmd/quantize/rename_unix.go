//go:build unix

package main

import (
	"os"
	"syscall"
)

// publish renames the finished output dir to out in one step, replacing out if it is
// an empty directory: rename(2) does that atomically, where os.Rename refuses any
// directory in the way.
func publish(dir, out string) error {
	if err := syscall.Rename(dir, out); err != nil {
		return &os.LinkError{Op: "rename", Old: dir, New: out, Err: err}
	}
	return nil
}
