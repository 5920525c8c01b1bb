package checkpoint_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/ingotml/ingot/nn/checkpoint"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestQuantizeCheckpoint quantizes every golden float model with router overrides, one
// module left in float, float16 scales and shards, and checks every tensor of the result.
func TestQuantizeCheckpoint(t *testing.T) {
	for set, dir := range stGoldenSets(t) {
		t.Run(set, func(t *testing.T) {
			src := ckOpen(t, dir)
			modules := checkpoint.RouterOverrides(src.Names())
			const kept = "model.layers.0.input_layernorm" // a vector: never quantized anyway
			floatModule := ""
			for _, n := range src.Names() {
				if strings.HasSuffix(n, "q_proj.weight") || strings.HasSuffix(n, "in_proj_z.weight") {
					floatModule = strings.TrimSuffix(n, ".weight")
					break
				}
			}
			require.NotEmpty(t, floatModule)
			modules[floatModule] = nil
			out := filepath.Join(t.TempDir(), "q")
			opt := checkpoint.QuantizeOptions{Default: checkpoint.QuantSpec{Bits: 4, GroupSize: 64}, Modules: modules,
				ScaleType: checkpoint.F16, Write: checkpoint.WriteOptions{ShardBytes: 200_000}}
			require.NoError(t, checkpoint.QuantizeCheckpoint(src, out, opt))
			q := ckOpen(t, out)
			require.NotNil(t, q.Quant)
			assert.Equal(t, opt.Default, q.Quant.Default)
			assert.False(t, q.Quantized(kept))
			assert.False(t, q.Quantized(floatModule), "override false keeps %s in float", floatModule)
			quantized := 0
			for _, name := range src.Names() {
				module := strings.TrimSuffix(name, ".weight")
				info, _, _ := src.Info(name)
				// The skip rule: a float matrix "<module>.weight" is quantized iff its
				// input width is a multiple of its group and no override keeps it in
				// float (a set whose widths fit no group quantizes nothing).
				spec, on := opt.Default, true
				if s, ok := modules[module]; ok {
					spec, on = checkpoint.QuantSpec{}, s != nil
					if s != nil {
						spec = *s
					}
				}
				_, float := checkpoint.EngineDType(info.DType)
				wantQ := on && float && strings.HasSuffix(name, ".weight") && len(info.Shape) == 2 && info.Shape[1]%spec.GroupSize == 0
				require.Equal(t, wantQ, q.Quantized(module), "%s %v", name, info.Shape)
				if !q.Quantized(module) {
					a, _, err := src.Bytes(name)
					require.NoError(t, err)
					b, _, err := q.Bytes(name)
					require.NoError(t, err)
					require.Equal(t, a, b, "%s copied unchanged", name)
					continue
				}
				quantized++
				spec, ok := q.Quant.For(module)
				require.True(t, ok)
				if s, ok := modules[module]; ok {
					assert.Equal(t, *s, spec, module)
				}
				w, _, err := src.Float32(name)
				require.NoError(t, err)
				want, err := checkpoint.Quantize(w, info.Shape, spec.Bits, spec.GroupSize, checkpoint.F16)
				require.NoError(t, err)
				packed, _, err := q.Bytes(module + ".weight")
				require.NoError(t, err)
				scales, _, err := q.Bytes(module + ".scales")
				require.NoError(t, err)
				assert.Equal(t, ckWordBytes(want.Weight), packed, module)
				assert.Equal(t, want.Scales, scales, module)
			}
			t.Logf("%d modules quantized", quantized)
		})
	}
}

func ckWordBytes(w []uint32) []byte {
	b := make([]byte, 0, 4*len(w))
	for _, x := range w {
		b = append(b, byte(x), byte(x>>8), byte(x>>16), byte(x>>24))
	}
	return b
}
