package metal

import "github.com/ingotml/ingot/kernels"

// The GPU's choice between a fused block and the unfused kernels (issue 21, target 2),
// from the H200 measurement of the MSL twins translated to CUDA (README, "What was run
// where"; docs/h200/run7-final.log):
//
//   - A fused block runs one threadgroup per token, which streams the block's weights
//     at 5 to 8 GB/s: gdn_block 1,880 us for 9.6 MB (5.1 GB/s), mlp_block 6,585 us for
//     50 MB (7.6 GB/s), moe_block (k 10) 18,958 us for 143 MB (7.5 GB/s). The choice
//     takes the slowest, 5 GB/s.
//   - The unfused kernels cost at least their launches: an empty kernel measures 2.7 us
//     the same way, and at a decode step's sizes the big ones (qmv, linear, sdpa,
//     qswitch_glu) take 7 to 33 us, filling the GPU.
//
// So the GPU takes a block only where its one threadgroup costs no more than twice the
// floor of the unfused kernels it replaces: FusedBlockReads / 5 GB/s <= 2 x launches x
// 2.7 us. The launch counts are the unfused path's per block, counted on the CPU
// device at the repro's sizes: a dense MLP 8 (add, rms_norm, 3 linear, silu, mul, add),
// a sparse-MoE block 19, a GDN layer's decode step 17 (Qwen3-Next's grouped
// projections add copies). That budget is 216 KB for mlp_block, 513 KB for moe_block
// and 459 KB for the GDN pair: the repro's toy models (about 50 to 80 KB a block) keep
// their fused blocks; the real models' (Qwen3.5-0.8B's MLP 44 MB, Qwen3-Next's routed
// experts 126 MB a token) take the unfused kernels, which spread over the GPU.

const (
	// oneGroupBytesPerSecond is the slowest measured rate of a fused block's
	// threadgroup.
	oneGroupBytesPerSecond = 5e9
	// launchFloorSeconds is an empty kernel's time, the least any unfused kernel costs.
	launchFloorSeconds = 2.7e-6
	// fusedSlack is how many times the unfused floor a fused block may cost.
	fusedSlack = 2
)

// unfusedLaunches is how many kernels the unfused path launches in place of each fused
// block (at least: see above).
var unfusedLaunches = map[*kernels.Kernel]int{kernels.KMLPBlock: 8, kernels.KMoEBlock: 19, kernels.KGDNBlock: 17}

// TakesFused is the GPU's choice of fused blocks (graph.FusedChooser): sizes the
// Metal twin takes whose one threadgroup per token costs at most fusedSlack times the
// unfused kernels' launch floor.
func (g *GPU) TakesFused(k *kernels.Kernel, p any) bool {
	n, ok := unfusedLaunches[k]
	if !ok || !kernels.FusedBlockFits(k, p) {
		return false
	}
	return float64(kernels.FusedBlockReads(k, p))/oneGroupBytesPerSecond <= fusedSlack*float64(n)*launchFloorSeconds
}
