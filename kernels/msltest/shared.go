package msltest

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
)

// Shared is a buffer that Go code and kernel programs see at once, as CPU and
// GPU see one buffer on unified memory: a file in a private directory
// (on tmpfs where there is one), mapped by both. Bytes is its contents; a
// kernel reaches past its end into a PROT_NONE page, which faults.
type Shared struct {
	// Bytes is the buffer, len(Bytes) == the size asked for.
	Bytes   []byte
	path    string
	mapping []byte // the whole file, a whole number of pages
	dataOff int    // where Bytes starts in it
}

var (
	sharedOnce sync.Once
	sharedRoot string
	sharedErr  error
	sharedSeq  atomic.Uint64
)

// sharedDir is this process's directory of shared buffers, created 0700.
func sharedDir() (string, error) {
	sharedOnce.Do(func() {
		base := os.TempDir()
		if st, err := os.Stat("/dev/shm"); err == nil && st.IsDir() {
			base = "/dev/shm"
		}
		sharedRoot, sharedErr = os.MkdirTemp(base, "ingot-msltest-shared-")
	})
	return sharedRoot, sharedErr
}

// NewShared makes a shared buffer of n > 0 zero bytes. Bytes starts 16-byte
// aligned, and its end is at most 15 bytes short of the guard page.
func NewShared(n int) (*Shared, error) {
	if n <= 0 {
		return nil, fmt.Errorf("msltest: a shared buffer of %d bytes", n)
	}
	dir, err := sharedDir()
	if err != nil {
		return nil, fmt.Errorf("msltest: shared buffer directory: %w", err)
	}
	page := os.Getpagesize()
	padded := (n + 15) &^ 15
	fileLen := (padded + page - 1) / page * page
	path := filepath.Join(dir, fmt.Sprintf("%d", sharedSeq.Add(1)))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("msltest: %w", err)
	}
	defer f.Close()
	if err := f.Truncate(int64(fileLen)); err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("msltest: %w", err)
	}
	m, err := syscall.Mmap(int(f.Fd()), 0, fileLen, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("msltest: mapping a shared buffer of %d bytes: %w", n, err)
	}
	off := fileLen - padded
	return &Shared{Bytes: m[off : off+n : off+n], path: path, mapping: m, dataOff: off}, nil
}

// Free unmaps and deletes the buffer; Bytes must not be used afterwards.
func (b *Shared) Free() error {
	if b.mapping == nil {
		return nil
	}
	err := syscall.Munmap(b.mapping)
	if rmErr := os.Remove(b.path); err == nil {
		err = rmErr
	}
	b.mapping, b.Bytes = nil, nil
	return err
}
