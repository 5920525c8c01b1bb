package checkpoint

import (
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSafetensorsReadRangesFallback runs the path taken where memory mapping is
// unavailable: each tensor's byte range is read from the open file on request.
func TestSafetensorsReadRangesFallback(t *testing.T) {
	saved := mmapFile
	t.Cleanup(func() { mmapFile = saved })
	mmapFile = func(*os.File, int64) ([]byte, func() error, error) { return nil, nil, errors.New("no mmap") }

	header := `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"I32","shape":[1],"data_offsets":[8,12]}}`
	file := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	file = append(file, header...)
	file = binary.LittleEndian.AppendUint32(file, math.Float32bits(1.5))
	file = binary.LittleEndian.AppendUint32(file, math.Float32bits(-2))
	file = binary.LittleEndian.AppendUint32(file, 7)
	path := filepath.Join(t.TempDir(), "f.safetensors")
	require.NoError(t, os.WriteFile(path, file, 0o644))

	s, err := ReadSafetensors(path)
	require.NoError(t, err)
	require.Nil(t, s.data)
	v, _, err := s.Float32("a")
	require.NoError(t, err)
	assert.Equal(t, []float32{1.5, -2}, v)
	ints, _, err := s.Int64("b")
	require.NoError(t, err)
	assert.Equal(t, []int64{7}, ints)
	require.NoError(t, s.Close())
	_, _, err = s.Float32("a")
	require.ErrorIs(t, err, ErrClosed)
}
