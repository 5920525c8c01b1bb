package metal

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/kernels"
	"github.com/ingotml/ingot/nn/qwen35"
)

// A kernel whose work per thread grows with the square of a model dimension is one
// whose threads do not grow with the work: a block in one threadgroup, a row loop
// inside a thread. The recorded steps measure it as bytes read per thread, at a
// model's sizes and again with one dimension doubled, or every width at once (as a
// larger model of the family has them): a launch spread over the GPU reads at most
// twice as much per thread when they double (the other factor of its bytes grows its
// threads), while a kernel with a fixed thread count reads four times as much when
// two of its dimensions double together. maxWorkGrowth leaves room for threadgroup
// counts rounded up and the per-lane units qmv switches at 4,096 threadgroups.
//
// A launch that already fills the GPU at the smaller size (fullGPU threadgroups in a
// dispatch, or fullGPU threadgroups' worth of 256 threads: about one wave of an H200's
// 132 cores at two a core, several per core of an M-series Max's 40) may give each
// thread more work as the work grows: sdpa caps its key splits at 256 threadgroups
// (kernels' sdpaGroups; docs/h200/run10-exp3.log), the staged qmv its simdgroups at
// one threadgroup a core (132 of up to 512 threads, kernels' qmvStagedGroups).
const (
	maxWorkGrowth = 2.5
	fullGPU       = 256
)

// fills reports whether one of l's dispatches has fullGPU threadgroups, or as many
// threads as fullGPU threadgroups of 256.
func (l *launchGeom) fills() bool {
	for _, d := range l.dispatches {
		if d.groups() >= fullGPU || d.groups()*d.group[0]*d.group[1]*d.group[2] >= fullGPU*256 {
			return true
		}
	}
	return false
}

// widen doubles a group of a config's dimensions (head sizes halve the base instead:
// they are capped, 256 for attention and GatedDeltaMaxDk for the recurrence).
type widen struct {
	name  string
	base  func(c *qwen35.Config, keys *int) // makes the smaller size (head sizes only)
	twice func(c *qwen35.Config, keys *int)
}

var widenings = []widen{
	{"hidden", nil, func(c *qwen35.Config, _ *int) { c.HiddenSize *= 2 }},
	{"MLP and expert widths", nil, func(c *qwen35.Config, _ *int) {
		c.IntermediateSize *= 2
		c.MoEIntermediateSize *= 2
		c.SharedExpertIntermediateSize *= 2
	}},
	{"experts", nil, func(c *qwen35.Config, _ *int) { c.NumExperts *= 2 }},
	{"heads", nil, func(c *qwen35.Config, _ *int) {
		c.NumHeads *= 2
		c.NumKVHeads *= 2
		c.LinearNumKeyHeads *= 2
		c.LinearNumValueHeads *= 2
	}},
	{"head sizes", func(c *qwen35.Config, _ *int) {
		c.HeadDim /= 2
		c.LinearKeyHeadDim /= 2
		c.LinearValueHeadDim /= 2
	}, func(*qwen35.Config, *int) {}},
	{"cached keys", nil, func(_ *qwen35.Config, keys *int) { *keys *= 2 }},
	{"vocabulary", nil, func(c *qwen35.Config, _ *int) { c.VocabSize *= 2 }},
	{"every width", nil, func(c *qwen35.Config, keys *int) {
		c.HiddenSize *= 2
		c.IntermediateSize *= 2
		c.MoEIntermediateSize *= 2
		c.SharedExpertIntermediateSize *= 2
		c.NumExperts *= 2
		c.NumHeads *= 2
		c.NumKVHeads *= 2
		c.LinearNumKeyHeads *= 2
		c.LinearNumValueHeads *= 2
		*keys *= 2
		c.VocabSize *= 2
	}},
}

// workGrowth records cfg's step with weights of bits at a widening's two sizes and
// returns, per launch, how many times more bytes per thread the larger one reads.
func workGrowth(t *testing.T, cfg *qwen35.Config, bits int, w widen) map[string]float64 {
	small, keys := *cfg, 4096
	if w.base != nil {
		w.base(&small, &keys)
	}
	big, bigKeys := small, keys
	w.twice(&big, &bigKeys)
	a, b := recordStep(t, &small, keys, bits), recordStep(t, &big, bigKeys, bits)
	require.Len(t, b, len(a), "%s: the step's launches", w.name)
	out := map[string]float64{}
	for i := range a {
		require.Equal(t, a[i].kernel, b[i].kernel, "%s: launch %d", w.name, i)
		if !a[i].fills() {
			out[a[i].name] = growth(&a[i], &b[i])
		}
	}
	return out
}

// growth is how many times more bytes per thread launch b reads than launch a.
func growth(a, b *launchGeom) float64 {
	return (float64(b.bytes) / float64(b.threads())) / (float64(a.bytes) / float64(a.threads()))
}

// TestDecodeStepWorkPerThreadIsLinear: in the recorded decode steps of Qwen3.5-0.8B
// and Qwen3-Next (4-bit and float32), no launch's bytes read per thread grow faster
// than linearly in any model dimension, nor in all widths at once (float32 switch_glu,
// once one threadgroup per token, now splits its rows as qswitch_glu does).
// The check is seen to bite on mlp_block at two real widths (which the GPU declines).
func TestDecodeStepWorkPerThreadIsLinear(t *testing.T) {
	mlp := func(h, i int) launchGeom {
		return record(t, func(f *fakeBackend) *stepBuilder {
			s := &stepBuilder{f: f}
			s.add("mlp_block", kernels.KMLPBlock, &kernels.MLPBlockParams{T: 1, H: h, I: i},
				s.f32([]int{1, h}, []int{1, h}, []int{h}, []int{i, h}, []int{i, h}, []int{h, i}, []int{1, h})...)
			return s
		})[0]
	}
	a, b := mlp(1024, 1024), mlp(2048, 2048)
	require.False(t, a.fills())
	require.InDelta(t, 4, growth(&a, &b), 0.01, "mlp_block: one threadgroup")

	for _, name := range []string{"qwen3_5_0.8b", "qwen3_next_80b"} {
		for _, bits := range []int{4, 0} {
			cfg := realConfig(t, name)
			t.Run(name+"/"+format(bits), func(t *testing.T) {
				var over []string
				for _, w := range widenings {
					if w.name == "experts" && cfg.NumExperts == 0 {
						continue
					}
					for launch, g := range workGrowth(t, cfg, bits, w) {
						if g > maxWorkGrowth {
							t.Logf("%s: %s reads %.2fx the bytes per thread", w.name, launch, g)
							over = append(over, w.name+": "+launch)
						}
					}
				}
				require.Empty(t, over, "launches whose work per thread grows faster than linearly")
			})
		}
	}
}
