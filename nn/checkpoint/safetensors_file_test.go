package checkpoint_test

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"github.com/ingotml/ingot/nn/checkpoint"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSafetensorsReadsOnlyTensorRanges: a valid file whose last tensor is huge (and
// sparse on disk) opens, and its small tensor reads, without reading or allocating the
// large one.
func TestSafetensorsReadsOnlyTensorRanges(t *testing.T) {
	if strconv.IntSize < 64 {
		t.Skip("a 1 TiB file cannot be mapped on a 32-bit platform")
	}
	const tail = 1 << 40
	path := stWrite(t, "sparse.safetensors", stRaw(`{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"z":{"dtype":"U8","shape":[`+
		strconv.Itoa(tail)+`],"data_offsets":[4,`+strconv.Itoa(4+tail)+`]}}`, stF32(2.5)))
	info, err := os.Stat(path)
	require.NoError(t, err)
	if err := os.Truncate(path, info.Size()+tail); err != nil {
		t.Skipf("no sparse files here: %v", err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	s, err := checkpoint.ReadSafetensors(path)
	require.NoError(t, err)
	defer s.Close()
	v, shape, err := s.Float32("w")
	require.NoError(t, err)
	runtime.ReadMemStats(&after)
	assert.Equal(t, []float32{2.5}, v)
	assert.Equal(t, []int{1}, shape)
	// The header, the maps and one float: far below a megabyte, whatever the tail.
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20))
}

func TestSafetensorsCloseReleasesTheFile(t *testing.T) {
	path := stWrite(t, "c.safetensors", stBuild(t, nil, stTensor{"w", checkpoint.F32, []int{2}, stF32(1, 2)}))
	s, err := checkpoint.ReadSafetensors(path)
	require.NoError(t, err)
	b, _, err := s.Bytes("w")
	require.NoError(t, err)
	assert.Equal(t, stF32(1, 2), b)
	require.NoError(t, s.Close())
	require.NoError(t, s.Close(), "a second Close is a no-op")
	_, _, err = s.Float32("w")
	require.ErrorIs(t, err, checkpoint.ErrClosed)
	assert.EqualError(t, err, "safetensors "+path+": tensor w: file closed")

	// A parsed in-memory file has nothing to release, but obeys the same rule.
	m, err := checkpoint.ParseSafetensors("mem", stBuild(t, nil, stTensor{"w", checkpoint.F32, []int{1}, stF32(1)}))
	require.NoError(t, err)
	require.NoError(t, m.Close())
	_, _, err = m.Bytes("w")
	require.ErrorIs(t, err, checkpoint.ErrClosed)
}

// TestSafetensorsNotAFile: directories and devices are named as such, not reported as
// a bad header length.
func TestSafetensorsNotAFile(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "model.safetensors")
	require.NoError(t, os.Mkdir(dir, 0o755))
	cases := map[string]string{dir: "is a directory, not a safetensors file"}
	if _, err := os.Stat("/dev/zero"); err == nil {
		cases["/dev/zero"] = "is a device, not a regular file"
	}
	for path, reason := range cases {
		s, err := checkpoint.ReadSafetensors(path)
		assert.Nil(t, s)
		var fe *checkpoint.FormatError
		require.ErrorAs(t, err, &fe, path)
		assert.Equal(t, checkpoint.FormatError{File: path, Reason: reason}, *fe)
	}
}
