package metal

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/internal/golden"
	"github.com/ingotml/ingot/kernels"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/qwen35"
)

// realBlocks are the fused blocks' params at a real model's sizes (cfg from its
// config.json): its feed-forward block (the MLP, or the sparse-MoE block) and its GDN
// layer.
func realBlocks(cfg *qwen35.Config) map[*kernels.Kernel]any {
	out := map[*kernels.Kernel]any{kernels.KGDNBlock: &kernels.GDNBlockParams{B: 1, H: cfg.HiddenSize,
		Hk: cfg.LinearNumKeyHeads, Hv: cfg.LinearNumValueHeads, Dk: cfg.LinearKeyHeadDim, Dv: cfg.LinearValueHeadDim,
		K: cfg.LinearConvKernel, Grouped: cfg.ModelType == qwen35.TypeQwen3Next}}
	if cfg.NumExperts > 0 {
		out[kernels.KMoEBlock] = &kernels.MoEBlockParams{T: 1, H: cfg.HiddenSize, E: cfg.NumExperts,
			K: cfg.NumExpertsPerTok, I: cfg.MoEIntermediateSize, Is: cfg.SharedExpertIntermediateSize}
	} else {
		out[kernels.KMLPBlock] = &kernels.MLPBlockParams{T: 1, H: cfg.HiddenSize, I: cfg.IntermediateSize}
	}
	return out
}

// TestGPUTakesFusedAtSmallSizesOnly: the GPU's choice (TakesFused) at the real models'
// sizes, at the repro's, and at the edge of its budget; the CPU's for comparison.
func TestGPUTakesFusedAtSmallSizesOnly(t *testing.T) {
	gpu := new(GPU) // TakesFused reads no state: the choice is the same on every GPU
	for _, name := range []string{"qwen3_5_0.8b", "qwen3_next_80b"} {
		cfg, err := qwen35.LoadConfig("../cmd/decode/testdata/" + name + "/config.json")
		require.NoError(t, err)
		for k, p := range realBlocks(cfg) {
			require.False(t, graph.TakesFused(gpu, k, p), "%s: the GPU takes %s at %+v", name, k.Name, p)
		}
	}
	// Qwen3-Next's MoE block is within the twins' limits: the CPU takes it, the GPU not
	// (one threadgroup reads 126 MB of routed experts a token: 19 ms measured).
	next := &kernels.MoEBlockParams{T: 1, H: 2048, E: 512, K: 10, I: 512, Is: 512}
	require.True(t, graph.TakesFused(graph.CPU(), kernels.KMoEBlock, next))
	require.False(t, graph.TakesFused(gpu, kernels.KMoEBlock, next))
	// The largest mlp_block the twins take (6.6 ms measured on one threadgroup).
	big := &kernels.MLPBlockParams{T: 1, H: 2048, I: 2048}
	require.True(t, graph.TakesFused(graph.CPU(), kernels.KMLPBlock, big))
	require.False(t, graph.TakesFused(gpu, kernels.KMLPBlock, big))

	// The repro's blocks: both devices take them.
	for _, typ := range []string{qwen35.TypeQwen35, qwen35.TypeQwen35MoE, qwen35.TypeQwen3Next} {
		cfg, err := qwen35.ReproConfig(nn.ReproOptions{ModelType: typ})
		require.NoError(t, err)
		for k, p := range realBlocks(cfg) {
			require.True(t, graph.TakesFused(gpu, k, p), "%s: %s at %+v", typ, k.Name, p)
			require.True(t, graph.TakesFused(graph.CPU(), k, p), "%s: %s at %+v", typ, k.Name, p)
		}
	}
	// The budget's edge: mlp_block at H 64 reads 4*(3*64*I + 64) bytes, against
	// 2 x 8 launches x 2.7 us x 5 GB/s = 216,000: I 280 is taken, I 281 is not.
	require.Equal(t, 215_296, kernels.FusedBlockReads(kernels.KMLPBlock, &kernels.MLPBlockParams{H: 64, I: 280}))
	require.True(t, gpu.TakesFused(kernels.KMLPBlock, &kernels.MLPBlockParams{T: 1, H: 64, I: 280}))
	require.False(t, gpu.TakesFused(kernels.KMLPBlock, &kernels.MLPBlockParams{T: 1, H: 64, I: 281}))
	// Not a fused block.
	require.False(t, gpu.TakesFused(kernels.KQMV, &kernels.QuantParams{}))
	require.False(t, graph.TakesFused(graph.CPU(), kernels.KQMV, &kernels.QuantParams{}))
}

// choosingCPU runs on the CPU with a given device's choice of fused blocks, and counts
// the kernels each batch launches.
type choosingCPU struct {
	graph.Device
	chooser graph.FusedChooser
	counts  map[string]int
}

func (d *choosingCPU) TakesFused(k *kernels.Kernel, p any) bool { return d.chooser.TakesFused(k, p) }

func (d *choosingCPU) Run(batch []kernels.Launch) error {
	for i := range batch {
		d.counts[batch[i].Kernel.Name]++
	}
	return d.Device.Run(batch)
}

// stepKernels builds cfg's random model at float32 on a graph whose device makes
// chooser's choice, and returns how many of each kernel its second decode step
// launches.
func stepKernels(t *testing.T, cfg *qwen35.Config, chooser graph.FusedChooser) map[string]int {
	d := &choosingCPU{Device: graph.CPU(), chooser: chooser, counts: map[string]int{}}
	m, err := qwen35.NewRandom(cfg, graph.New(d, graph.Options{}), 3, nn.Options{})
	require.NoError(t, err)
	c := m.MakeCache(cache.Eager)
	golden.Forward(t, m, [][]int32{{1, 2, 3}}, c)
	golden.Forward(t, m, [][]int32{{4}}, c)
	clear(d.counts)
	golden.Forward(t, m, [][]int32{{5}}, c)
	return d.counts
}

// TestFusedChoiceOnEachDevice: which kernels a decode step launches under each device's
// choice. The repro's toy models take the fused blocks on both; a Qwen3-Next-shaped
// sparse layer (its experts' width, top-10 and shared expert; 16 experts and hidden
// size 64 to keep the weights small, still 4.3 MB of routed experts a token) takes
// moe_block on the CPU and the unfused kernels on the GPU, with Qwen3-Next's GDN
// layer (8,192 conv channels) unfused on both.
func TestFusedChoiceOnEachDevice(t *testing.T) {
	gpu, cpu := new(GPU), graph.CPU().(graph.FusedChooser)
	toy, err := qwen35.ReproConfig(nn.ReproOptions{Layers: 4, Interval: 4})
	require.NoError(t, err)
	for _, ch := range []graph.FusedChooser{cpu, gpu} {
		n := stepKernels(t, toy, ch)
		require.Equal(t, 3, n["gdn_block"], "%T", ch)
		require.Equal(t, 3, n["gdn_conv_step"], "%T", ch)
		require.Equal(t, 4, n["moe_block"], "%T", ch)
		require.Zero(t, n["switch_glu"]+n["gated_delta"], "%T", ch)
	}

	next, err := qwen35.LoadConfig("../cmd/decode/testdata/qwen3_next_80b/config.json")
	require.NoError(t, err)
	next.HiddenSize, next.NumExperts, next.VocabSize = 64, 16, 256
	next.NumLayers, next.LayerTypes = 4, next.LayerTypes[:4]
	require.NoError(t, next.Validate())
	n := stepKernels(t, next, cpu)
	require.Equal(t, 4, n["moe_block"], "the CPU takes the MoE block")
	require.Equal(t, 3, n["gated_delta"], "GDN unfused (conv channels over gdn_block's limit)")
	require.Zero(t, n["gdn_block"]+n["switch_glu"])
	n = stepKernels(t, next, gpu)
	require.Zero(t, n["moe_block"]+n["gdn_block"]+n["mlp_block"], "the GPU takes no fused block")
	require.Equal(t, 4, n["switch_glu"], "the experts, unfused")
	require.Equal(t, 3, n["gated_delta"])
}

// chooseOnly takes the fused blocks in take (within their limits) and no other.
type chooseOnly map[*kernels.Kernel]bool

func (c chooseOnly) TakesFused(k *kernels.Kernel, p any) bool {
	return c[k] && kernels.FusedBlockFits(k, p)
}

// TestUnfusedLaunchCounts ties the GPU's choice to the unfused path it weighs: per
// block, the decode step of the repro's models (4 layers, 3 of them GDN) launches
// unfusedLaunches[k] more kernels (plus the fused block's own launches) when the
// device declines block k.
func TestUnfusedLaunchCounts(t *testing.T) {
	all := chooseOnly{kernels.KGDNBlock: true, kernels.KMLPBlock: true, kernels.KMoEBlock: true}
	total := func(n map[string]int) int {
		s := 0
		for _, v := range n {
			s += v
		}
		return s
	}
	for _, c := range []struct {
		typ string
		ff  *kernels.Kernel
	}{{qwen35.TypeQwen35, kernels.KMLPBlock}, {qwen35.TypeQwen35MoE, kernels.KMoEBlock}} {
		cfg, err := qwen35.ReproConfig(nn.ReproOptions{ModelType: c.typ, Layers: 4, Interval: 4})
		require.NoError(t, err)
		fused := total(stepKernels(t, cfg, all))
		noGDN := total(stepKernels(t, cfg, chooseOnly{c.ff: true}))
		none := total(stepKernels(t, cfg, chooseOnly{}))
		require.Equal(t, 3*(unfusedLaunches[kernels.KGDNBlock]-2), noGDN-fused, "%s: GDN steps (2 fused kernels each)", c.typ)
		require.Equal(t, 4*(unfusedLaunches[c.ff]-1), none-noGDN, "%s: %s", c.typ, c.ff.Name)
	}
}
