package models_test

import (
	"encoding/binary"
	"math"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/checkpoint"
	"github.com/ingotml/ingot/nn/models"
)

// describedCheckpoint writes a float checkpoint holding exactly the description's
// parameters (mlx-lm's switch_mlp names for expert banks, a [C, K, 1] conv), each
// element 0.01: a file made from the description alone.
func describedCheckpoint(t *testing.T, cfg models.Config, d *nn.Description) string {
	t.Helper()
	var ts []checkpoint.WriteTensor
	for _, p := range d.Params {
		name, shape := p.Name, p.Shape
		if i := strings.LastIndex(name, ".experts."); i >= 0 {
			name = name[:i] + ".switch_mlp." + name[i+len(".experts."):] + ".weight"
		}
		if strings.HasSuffix(name, "conv1d.weight") {
			shape = []int{shape[0], shape[1], 1}
		}
		n := 1
		for _, x := range shape {
			n *= x
		}
		data := make([]byte, 4*n)
		for i := 0; i < n; i++ {
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(0.01))
		}
		ts = append(ts, checkpoint.WriteTensor{Name: name, DType: checkpoint.F32, Shape: shape, Data: data})
	}
	raw, err := cfg.JSON()
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "ck")
	require.NoError(t, checkpoint.WriteCheckpoint(dir, raw, ts, checkpoint.WriteOptions{Format: checkpoint.KeepFormat}))
	return dir
}

// TestDescriptionMatchesBuild holds every registered model type's description to what
// its builds make: the random build allocates exactly the described weight buffers
// plus constants; a checkpoint written from the description alone loads (so every
// tensor the loader asks for is described, with its shape), allocates exactly that
// count again (so nothing described goes unread), and inspects back to the same names
// and shapes; the quantized copy of that checkpoint inspects to the buffer count its
// load allocates.
func TestDescriptionMatchesBuild(t *testing.T) {
	for _, typ := range models.Types() {
		t.Run(typ, func(t *testing.T) {
			cfg, err := models.ReproConfig(nn.ReproOptions{ModelType: typ, Layers: 6, Interval: 3, Hidden: 64})
			require.NoError(t, err)
			d, err := cfg.Describe()
			require.NoError(t, err)
			require.Equal(t, 6, d.Layers())
			want := d.WeightBuffers() + d.Constants
			require.Equal(t, len(d.Params), d.WeightBuffers(), "a random model's parameters are one buffer each")

			g := graph.NewCPU(graph.Options{})
			m, err := cfg.Random(g, 1, nn.Options{})
			require.NoError(t, err)
			require.NoError(t, g.Synchronize())
			require.Equal(t, want, g.Allocator().LiveBufferCount(), "random build")
			runtime.KeepAlive(m)

			dir := describedCheckpoint(t, cfg, d)
			g = graph.NewCPU(graph.Options{})
			m, err = models.Load(dir, g, nn.Options{})
			require.NoError(t, err)
			require.NoError(t, g.Synchronize())
			require.Equal(t, want, g.Allocator().LiveBufferCount(), "checkpoint load")
			runtime.KeepAlive(m)
			got, err := models.Inspect(dir)
			require.NoError(t, err)
			require.Equal(t, len(d.Params), len(got.Params))
			for i, p := range d.Params {
				require.Equal(t, p.Name, got.Params[i].Name)
				require.Equal(t, p.Shape, got.Params[i].Shape, p.Name)
			}

			q := filepath.Join(t.TempDir(), "q")
			src, err := checkpoint.OpenCheckpoint(dir)
			require.NoError(t, err)
			defer src.Close()
			require.NoError(t, checkpoint.QuantizeCheckpoint(src, q, checkpoint.QuantizeOptions{Default: checkpoint.QuantSpec{Bits: 4, GroupSize: 32}, ScaleType: checkpoint.F32}))
			qd, err := models.Inspect(q)
			require.NoError(t, err)
			require.Greater(t, qd.WeightBuffers(), len(qd.Params), "some modules are quantized")
			g = graph.NewCPU(graph.Options{})
			m, err = models.Load(q, g, nn.Options{})
			require.NoError(t, err)
			require.NoError(t, g.Synchronize())
			require.Equal(t, qd.WeightBuffers()+qd.Constants, g.Allocator().LiveBufferCount(), "quantized load")
			runtime.KeepAlive(m)
		})
	}
}
