package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// checkOutputs makes sure every output path can be written before any decoding
// starts, so a long run never ends in "cannot write". A file that exists is opened for
// writing and left as it was; one that does not is created and removed again.
// Two outputs naming one file (however spelt, or through a link) are refused: the
// later write would replace the earlier.
func (o *options) checkOutputs() error {
	type output struct{ flag, path string }
	var seen []output
	for _, f := range []output{{"--json-out", o.jsonOut}, {"--plot", o.plot}, {"--cpuprofile", o.cpuProfile}} {
		if f.path == "" {
			continue
		}
		for _, s := range seen {
			if samePath(s.path, f.path) {
				return fmt.Errorf("%w: %s %s and %s %s name one file: give each output its own path", errUsage, s.flag, s.path, f.flag, f.path)
			}
		}
		seen = append(seen, f)
		if err := checkWritable(f.path); err != nil {
			return fmt.Errorf("%w: %s %s: %v", errUsage, f.flag, f.path, err)
		}
	}
	return nil
}

// samePath reports whether a and b name one file: the same cleaned absolute path, or
// (both existing) the same file.
func samePath(a, b string) bool {
	aa, err1 := filepath.Abs(a)
	ab, err2 := filepath.Abs(b)
	if err1 == nil && err2 == nil && aa == ab {
		return true
	}
	sa, err1 := os.Stat(a)
	sb, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(sa, sb)
}

// outFile is an output being written: to a hidden temporary file beside the path,
// renamed over it by commit, so that a reader, a concurrent run or a kill mid-write
// sees the old file or the new one, never a truncated one. A path that exists and is
// not a regular file (a device such as /dev/null) is written in place: a rename would
// replace the device. Write errors are kept and returned by commit.
type outFile struct {
	f    *os.File
	tmp  string // "" when written in place
	path string
	err  error // the first write error
}

// createOut starts writing path.
func createOut(path string) (*outFile, error) {
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		f, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return nil, unwrapPath(err)
		}
		return &outFile{f: f, path: path}, nil
	}
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-")
	if err != nil {
		return nil, unwrapPath(err)
	}
	return &outFile{f: f, tmp: f.Name(), path: path}, nil
}

// Write writes to the temporary file, keeping the first error.
func (o *outFile) Write(b []byte) (int, error) {
	if o.err != nil {
		return 0, o.err
	}
	n, err := o.f.Write(b)
	if err != nil {
		o.err = unwrapPath(err)
	}
	return n, err
}

// commit closes the file and renames it over the path; on any error (a write's
// included) the temporary file is removed and the path left as it was.
func (o *outFile) commit() error {
	err := o.err
	if cerr := o.f.Close(); err == nil && cerr != nil {
		err = unwrapPath(cerr)
	}
	if o.tmp == "" {
		return err
	}
	if err == nil {
		if err = os.Chmod(o.tmp, 0o644); err == nil {
			err = os.Rename(o.tmp, o.path)
		}
	}
	if err != nil {
		os.Remove(o.tmp)
	}
	return unwrapLink(err)
}

// abort drops what was written: the path is left as it was.
func (o *outFile) abort() {
	o.f.Close()
	if o.tmp != "" {
		os.Remove(o.tmp)
	}
}

// writeOut writes path whole with write (see outFile).
func writeOut(path string, write func(io.Writer) error) error {
	o, err := createOut(path)
	if err != nil {
		return err
	}
	if err := write(o); err != nil {
		o.abort()
		return err
	}
	return o.commit()
}

// unwrapLink drops the *LinkError's repetition of the paths.
func unwrapLink(err error) error {
	var le *os.LinkError
	if errors.As(err, &le) {
		return le.Err
	}
	return err
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
