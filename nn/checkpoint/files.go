package checkpoint

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// MaxMetadataSize bounds a checkpoint's small JSON files (config.json and the index),
// so a huge or endless one (/dev/zero) is refused instead of read into memory. An index
// lists the tensor names a header does, so it shares the header's cap.
const MaxMetadataSize = MaxHeaderSize

// ErrNotRegular is wrapped by errors for a path that is not a regular file (a FIFO,
// device, socket or directory), which a checkpoint file must be.
var ErrNotRegular = errors.New("not a regular file")

// NotRegularError says what a checkpoint path is instead of a regular file.
type NotRegularError struct {
	Mode os.FileMode
}

// Error says what the file is ("is a named pipe, not a regular file").
func (e *NotRegularError) Error() string { return notRegular(e.Mode) }

// Unwrap returns ErrNotRegular.
func (e *NotRegularError) Unwrap() error { return ErrNotRegular }

// notRegular explains why a file that is not a regular file cannot be a checkpoint
// file ("" for a regular file).
func notRegular(m os.FileMode) string {
	switch {
	case m.IsRegular():
		return ""
	case m.IsDir():
		return "is a directory, not a safetensors file"
	case m&os.ModeDevice != 0:
		return "is a device, not a regular file"
	case m&os.ModeNamedPipe != 0:
		return "is a named pipe, not a regular file"
	case m&os.ModeSocket != 0:
		return "is a socket, not a regular file"
	}
	return fmt.Sprintf("is not a regular file (mode %s)", m)
}

// OpenRegular opens path for reading if it is a regular file, and never blocks: the
// path is checked before it is opened (opening a FIFO waits for a writer), opened
// non-blocking where the system allows (in case it was swapped for a FIFO meanwhile)
// and checked again through the descriptor. Errors are *fs.PathError naming path; for
// a FIFO, device, socket or directory it wraps a *NotRegularError.
func OpenRegular(path string) (*os.File, os.FileInfo, error) {
	// A failed Stat is left to the open, whose error says "open <path>: ...".
	if st, err := os.Stat(path); err == nil && !st.Mode().IsRegular() {
		return nil, nil, &fs.PathError{Op: "open", Path: path, Err: &NotRegularError{Mode: st.Mode()}}
	}
	f, err := os.OpenFile(path, os.O_RDONLY|openNoBlock, 0)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil || !st.Mode().IsRegular() {
		f.Close()
		if err == nil {
			err = &fs.PathError{Op: "open", Path: path, Err: &NotRegularError{Mode: st.Mode()}}
		}
		return nil, nil, err
	}
	return f, st, nil
}

// ReadMetadataFile reads a checkpoint's small JSON file (config.json, the index): a
// regular file (OpenRegular: a FIFO or device is refused, never waited on) of at most
// MaxMetadataSize bytes.
func ReadMetadataFile(path string) ([]byte, error) {
	f, st, err := OpenRegular(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Size() > MaxMetadataSize {
		return nil, tooLarge(path, st.Size())
	}
	// The limit holds even if the file grows after the size was taken.
	b, err := io.ReadAll(io.LimitReader(f, MaxMetadataSize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxMetadataSize {
		return nil, tooLarge(path, int64(len(b)))
	}
	return b, nil
}

func tooLarge(path string, n int64) error {
	return &fs.PathError{Op: "read", Path: path, Err: fmt.Errorf("%d bytes, over the %d-byte limit for a metadata file", n, MaxMetadataSize)}
}
