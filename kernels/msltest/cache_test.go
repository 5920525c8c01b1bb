package msltest

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCacheRefusesAPlantedBinary: a cached executable replaced behind msltest's back
// (here a shell script) is never run: the next build sees that its content does not
// match the recorded hash and compiles a fresh one; and a session started on the
// tampered file refuses it.
func TestCacheRefusesAPlantedBinary(t *testing.T) {
	RequireCompiler(t)
	t.Setenv("TMPDIR", t.TempDir()) // a cache of its own
	const src = `#include <metal_stdlib>
using namespace metal;
kernel void fill(device int* out [[buffer(0)]], uint i [[thread_position_in_grid]]) { out[i] = int(i) + 7; }
`
	s, err := OpenSource("plant.metal", src)
	require.NoError(t, err)
	exe := s.p.exe
	require.Equal(t, filepath.Join(os.TempDir(), "ingot-msltest-"+itoa(os.Getuid())), filepath.Dir(exe))
	st, err := os.Stat(filepath.Dir(exe))
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o700), st.Mode().Perm())

	marker := filepath.Join(t.TempDir(), "planted-ran")
	require.NoError(t, os.WriteFile(exe, []byte("#!/bin/sh\ntouch "+marker+"\n"), 0o755))
	err = s.Run("fill", Dispatch{Threads: [3]int{4, 1, 1}, Group: [3]int{4, 1, 1}}, []Buffer{{Index: 0, Data: make([]byte, 16)}})
	require.True(t, errors.Is(err, ErrTampered), "got %v", err)

	// A fresh build (another process's view) recompiles instead of trusting it.
	programsMu.Lock()
	clear(programs)
	programsMu.Unlock()
	s2, err := OpenSource("plant.metal", src)
	require.NoError(t, err)
	out := make([]byte, 16)
	require.NoError(t, s2.Run("fill", Dispatch{Threads: [3]int{4, 1, 1}, Group: [3]int{4, 1, 1}}, []Buffer{{Index: 0, Data: out}}))
	v, err := Values[int32](out)
	require.NoError(t, err)
	require.Equal(t, []int32{7, 8, 9, 10}, v)
	s2.Close()
	_, err = os.Stat(marker)
	require.True(t, os.IsNotExist(err), "the planted binary ran")
}

// TestCacheRefusesASharedDirectory: a cache directory others may write to is refused.
func TestCacheRefusesASharedDirectory(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	dir := filepath.Join(tmp, "ingot-msltest-"+itoa(os.Getuid()))
	require.NoError(t, os.Mkdir(dir, 0o700))
	require.NoError(t, os.Chmod(dir, 0o777))
	_, err := cacheDir()
	require.EqualError(t, err, "msltest: cache directory "+dir+" has mode -rwxrwxrwx; want 0700")
	require.NoError(t, os.Remove(dir))
	require.NoError(t, os.Symlink(tmp, dir))
	_, err = cacheDir()
	require.EqualError(t, err, "msltest: cache directory "+dir+" is not a directory (a symbolic link?)")
}

func itoa(n int) string { return strconv.Itoa(n) }
