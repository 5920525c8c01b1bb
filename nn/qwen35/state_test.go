package qwen35

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/tensor"
)

// TestPromptStateOwnsItsBuffers: after a prompt's forward, each GDN layer's conv and
// recurrent states own buffers of their own size. Were they views, the conv state
// would pin the prompt's conv window (K-1+S rows) and the recurrent state the
// recurrence's output y (S rows) until the next forward: at a 2,048-token chunk of
// Qwen3.5-0.8B, 68 MB a layer, 18 layers.
func TestPromptStateOwnsItsBuffers(t *testing.T) {
	cfg, err := ReproConfig(nn.ReproOptions{ModelType: TypeQwen35, Layers: 3, Interval: 3})
	require.NoError(t, err)
	g := graph.NewCPU(graph.Options{})
	m, err := NewRandom(cfg, g, 5, nn.Options{})
	require.NoError(t, err)
	caches := m.MakeCache(cache.Eager)
	const s = 300
	toks := make([]int32, s)
	for i := range toks {
		toks[i] = int32(1 + i%100)
	}
	tensor.WithScope(g, func() { m.Forward(tensor.FromInt32(g, toks, 1, s), caches) })
	require.NoError(t, cache.EvalState(caches))
	gdn := 0
	for i, c := range caches {
		ac, ok := c.(*cache.ArraysCache)
		if !ok {
			continue
		}
		gdn++
		for j, a := range []tensor.Array{ac.ConvState(), ac.SSMState()} {
			buf, _, err := g.Bytes(a.Handle())
			require.NoError(t, err)
			own := a.Size() * a.DType().Size()
			require.Less(t, len(buf), own+16384, "layer %d state %d %v: a %d-byte buffer for %d bytes", i, j, a.Shape(), len(buf), own)
		}
	}
	require.Equal(t, cfg.NumGDN(), gdn)
}
