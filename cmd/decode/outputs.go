package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// checkOutputs makes sure every output path can be written before any decoding
// starts, so a long run never ends in "cannot write". A file that exists is opened for
// writing and left as it was; one that does not is created and removed again.
func (o *options) checkOutputs() error {
	for _, f := range []struct{ flag, path string }{
		{"--json-out", o.jsonOut}, {"--plot", o.plot}, {"--cpuprofile", o.cpuProfile},
	} {
		if f.path == "" {
			continue
		}
		if err := checkWritable(f.path); err != nil {
			return fmt.Errorf("%w: %s %s: %v", errUsage, f.flag, f.path, err)
		}
	}
	return nil
}

func checkWritable(path string) error {
	st, err := os.Stat(path)
	switch {
	case err == nil && st.IsDir():
		return errors.New("is a directory")
	case err == nil && st.Mode()&(fs.ModeNamedPipe|fs.ModeSocket) != 0:
		// Opening a FIFO for writing waits for a reader, maybe forever; a device
		// (/dev/null) is fine.
		return errors.New("is a named pipe, not a regular file")
	case err == nil:
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return unwrapPath(err)
		}
		return f.Close()
	case !errors.Is(err, fs.ErrNotExist):
		return unwrapPath(err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return unwrapPath(err)
	}
	f.Close()
	return os.Remove(path)
}

// unwrapPath drops the *PathError's repetition of the path the message already names.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
