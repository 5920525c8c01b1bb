package models_test

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/internal/golden"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/models"
	"github.com/ingotml/ingot/tensor"
)

// TestLoadQuantizedCheckpoint: the registry loads mlx-lm's quantized, indexed
// checkpoint (model_type at the top, the text model's keys under text_config) and the
// model runs.
func TestLoadQuantizedCheckpoint(t *testing.T) {
	g := graph.NewCPU(graph.Options{})
	m, err := models.Load(filepath.Join(golden.MLXRoot(), "mlx_q4g32_12l"), g, nn.Options{})
	require.NoError(t, err)
	logits := m.Forward(tensor.FromInt32(g, []int32{1, 2, 3}, 1, 3), nil)
	require.Equal(t, []int{1, 3, m.VocabSize()}, logits.Shape())
	v, err := logits.Float32s()
	require.NoError(t, err)
	require.Len(t, v, 3*m.VocabSize())
}
