//go:build unix

package checkpoint_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/nn/checkpoint"
)

// ckSmallDir writes a one-tensor float checkpoint (config.json, an index and one
// shard) and returns its directory.
func ckSmallDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, checkpoint.WriteCheckpoint(dir, []byte(`{"model_type":"qwen3_5"}`),
		[]checkpoint.WriteTensor{{Name: "w", DType: checkpoint.F32, Shape: []int{1}, Data: stF32(1)}},
		checkpoint.WriteOptions{ShardBytes: 1 << 20}))
	return dir
}

// ckWithin runs f, failing the test if it has not returned after a few seconds (a
// blocked open). The stuck call is then released by opening the FIFO for writing.
func ckWithin(t *testing.T, fifo string, f func() error) error {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- f() }()
	select {
	case err := <-done:
		return err
	case <-time.After(5 * time.Second):
		if w, err := os.OpenFile(fifo, os.O_RDWR, 0); err == nil { // unblocks the reader
			w.Close()
		}
		<-done
		t.Fatalf("hung on the FIFO %s", fifo)
		return nil
	}
}

// TestCheckpointRefusesFIFOs: a FIFO in place of config.json, the index or a shard is
// refused at once, naming the file, instead of blocking in open until a writer comes.
func TestCheckpointRefusesFIFOs(t *testing.T) {
	for _, name := range []string{"config.json", checkpoint.IndexFile, "model-00001-of-00001.safetensors"} {
		t.Run(name, func(t *testing.T) {
			dir := ckSmallDir(t)
			path := filepath.Join(dir, name)
			require.NoError(t, os.Remove(path))
			require.NoError(t, syscall.Mkfifo(path, 0o644))
			err := ckWithin(t, path, func() error {
				c, err := checkpoint.OpenCheckpoint(dir)
				if err == nil {
					c.Close()
				}
				return err
			})
			want := map[string]string{
				"config.json":        "checkpoint " + path + ": cannot read the model config: open " + path + ": is a named pipe, not a regular file",
				checkpoint.IndexFile: "checkpoint " + path + ": cannot read the index: open " + path + ": is a named pipe, not a regular file",
			}[name]
			if want == "" {
				want = "safetensors " + path + ": is a named pipe, not a regular file"
			} else {
				require.ErrorIs(t, err, checkpoint.ErrNotRegular)
			}
			require.EqualError(t, err, want)
		})
	}
	// ReadMetadataFile and ReadSafetensors themselves, on a bare FIFO.
	fifo := filepath.Join(t.TempDir(), "fifo")
	require.NoError(t, syscall.Mkfifo(fifo, 0o644))
	err := ckWithin(t, fifo, func() error { _, err := checkpoint.ReadMetadataFile(fifo); return err })
	require.ErrorIs(t, err, checkpoint.ErrNotRegular)
	require.EqualError(t, err, "open "+fifo+": is a named pipe, not a regular file")
	err = ckWithin(t, fifo, func() error { _, err := checkpoint.ReadSafetensors(fifo); return err })
	require.EqualError(t, err, "safetensors "+fifo+": is a named pipe, not a regular file")
}

// TestCheckpointBoundsMetadata: config.json and the index are read only up to
// MaxMetadataSize; a larger file (here sparse) or a device is refused, naming it,
// without reading it into memory.
func TestCheckpointBoundsMetadata(t *testing.T) {
	for _, name := range []string{"config.json", checkpoint.IndexFile} {
		t.Run(name, func(t *testing.T) {
			dir := ckSmallDir(t)
			path := filepath.Join(dir, name)
			require.NoError(t, os.Truncate(path, checkpoint.MaxMetadataSize+1))
			_, err := checkpoint.OpenCheckpoint(dir)
			what := map[string]string{"config.json": "cannot read the model config", checkpoint.IndexFile: "cannot read the index"}[name]
			require.EqualError(t, err, "checkpoint "+path+": "+what+": read "+path+": 100000001 bytes, over the 100000000-byte limit for a metadata file")
		})
	}
	if _, err := os.Stat("/dev/zero"); err != nil {
		return
	}
	dir := ckSmallDir(t)
	path := filepath.Join(dir, "config.json")
	require.NoError(t, os.Remove(path))
	require.NoError(t, os.Symlink("/dev/zero", path))
	_, err := checkpoint.OpenCheckpoint(dir)
	require.EqualError(t, err, "checkpoint "+path+": cannot read the model config: open "+path+": is a device, not a regular file")
}
