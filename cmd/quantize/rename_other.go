//go:build !unix

package main

import "os"

// publish renames the finished output dir to out. Without rename(2)'s replacement of
// an empty directory, an empty out (checkOut allows only that) is removed first.
func publish(dir, out string) error {
	if st, err := os.Lstat(out); err == nil && st.IsDir() {
		if err := os.Remove(out); err != nil {
			return err
		}
	}
	return os.Rename(dir, out)
}
