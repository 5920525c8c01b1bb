package models_test

import (
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/models"
	"github.com/ingotml/ingot/tensor"
)

// TestWeightsInPlace: on the CPU device a checkpoint's weights are its mapped bytes
// (no copy: the load's active memory is the same, the Go heap does not grow by the
// weights), still one counted buffer object each; a file truncated underneath the
// loaded model fails the next evaluation with graph.ErrMemoryFault instead of killing
// the process with SIGBUS.
func TestWeightsInPlace(t *testing.T) {
	cfg, err := models.ReproConfig(nn.ReproOptions{ModelType: "qwen3_5_moe", Layers: 4, Interval: 4, Hidden: 256, Experts: 64})
	require.NoError(t, err)
	d, err := cfg.Describe()
	require.NoError(t, err)
	dir := describedCheckpoint(t, cfg, d)
	weights, _, err := d.WeightBytes()
	require.NoError(t, err)

	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	g := graph.NewCPU(graph.Options{})
	m, err := models.Load(dir, g, nn.Options{})
	require.NoError(t, err)
	require.NoError(t, g.Synchronize())
	runtime.GC()
	runtime.ReadMemStats(&after)
	require.Equal(t, d.WeightBuffers()+d.Constants, g.Allocator().LiveBufferCount())
	grown := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	require.Less(t, grown, weights/4, "Go heap grew by %d bytes for %d bytes of weights: copied", grown, weights)

	tokens := tensor.FromInt32(g, []int32{1, 2, 3}, 1, 3)
	_, err = m.Forward(tokens, nil).Float32s()
	require.NoError(t, err)

	require.NoError(t, os.Truncate(filepath.Join(dir, "model.safetensors"), 0))
	_, err = m.Forward(tokens, nil).Float32s()
	require.ErrorIs(t, err, graph.ErrMemoryFault)
	runtime.KeepAlive(m)
}
