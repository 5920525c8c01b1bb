//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package checkpoint_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/checkpoint"
	"github.com/ingotml/ingot/tensor"
)

// TestMappedFileShrinks: a weight file truncated while it is mapped (another process
// rewrote it) gives an error naming the file and tensor on every read of its bytes,
// where the read used to die of SIGBUS (exit 2).
func TestMappedFileShrinks(t *testing.T) {
	const rows, cols = 256, 256 // 256 KiB of float32, far past the first page
	reads := map[string]func(c *checkpoint.Checkpoint) error{
		"Float32": func(c *checkpoint.Checkpoint) error {
			_, _, err := c.Float32("m.weight")
			return err
		},
		"CheckFinite": func(c *checkpoint.Checkpoint) error { return c.CheckFinite("m.weight") },
		"AppendBytes": func(c *checkpoint.Checkpoint) error {
			_, err := c.AppendBytes(nil, "m.weight")
			return err
		},
		"Bytes under CatchFault": func(c *checkpoint.Checkpoint) error {
			return checkpoint.CatchFault(func() error {
				b, _, err := c.Bytes("m.weight")
				_ = slices.Clone(b)
				return err
			})
		},
	}
	for name, read := range reads {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, checkpoint.WriteCheckpoint(dir, []byte(`{}`),
				[]checkpoint.WriteTensor{{Name: "m.weight", DType: checkpoint.F32, Shape: []int{rows, cols}, Data: make([]byte, 4*rows*cols)}},
				checkpoint.WriteOptions{}))
			c, err := checkpoint.OpenCheckpoint(dir)
			require.NoError(t, err)
			defer c.Close()
			file := filepath.Join(dir, "model.safetensors")
			require.NoError(t, os.Truncate(file, 4096))
			err = read(c)
			require.ErrorIs(t, err, checkpoint.ErrFileChanged)
			msg := err.Error()
			t.Log(msg)
			require.True(t, strings.HasPrefix(msg, "checkpoint "+file+": "), msg)
			require.True(t, strings.HasSuffix(msg, ": the file changed (shrank?) while mapped"), msg)
			if name != "Bytes under CatchFault" {
				require.Contains(t, msg, ": tensor m.weight: reading byte ")
			}
		})
	}
}

// TestInPlaceWeightShrinks: on the CPU device Tensor uses the mapped bytes in place, so
// a file truncated after the load faults where a kernel reads it: the evaluation fails
// with graph.ErrMemoryFault instead of the process dying of SIGBUS.
func TestInPlaceWeightShrinks(t *testing.T) {
	const rows, cols = 256, 256
	dir := t.TempDir()
	require.NoError(t, checkpoint.WriteCheckpoint(dir, []byte(`{}`),
		[]checkpoint.WriteTensor{{Name: "m.weight", DType: checkpoint.F32, Shape: []int{rows, cols}, Data: make([]byte, 4*rows*cols)}},
		checkpoint.WriteOptions{}))
	c, err := checkpoint.OpenCheckpoint(dir)
	require.NoError(t, err)
	g := graph.NewCPU(graph.Options{})
	w, err := nn.LoadTensor(g, c, "m.weight")
	require.NoError(t, err)
	lin, err := nn.LoadLinear(g, c, "m")
	require.NoError(t, err)
	require.NoError(t, c.Close()) // the buffers keep the mapping pinned
	x := tensor.FromFloat32(g, make([]float32, cols), 1, cols)
	_, err = lin.Forward(x).Float32s()
	require.NoError(t, err)
	require.NoError(t, os.Truncate(filepath.Join(dir, "model.safetensors"), 4096))
	for _, a := range []tensor.Array{tensor.Sum(w, -1, false), lin.Forward(x)} {
		_, err = a.Float32s()
		require.ErrorIs(t, err, graph.ErrMemoryFault)
	}
}

// TestCatchFaultPassesOtherPanics: only faults on a mapped checkpoint are errors.
func TestCatchFaultPassesOtherPanics(t *testing.T) {
	require.PanicsWithValue(t, "x", func() { checkpoint.CatchFault(func() error { panic("x") }) })
	require.Panics(t, func() {
		checkpoint.CatchFault(func() error {
			var p *int
			return os.WriteFile(os.DevNull, []byte{byte(*p)}, 0)
		})
	})
}
