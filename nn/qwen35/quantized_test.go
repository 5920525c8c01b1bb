package qwen35

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/checkpoint"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/internal/golden"
	"github.com/ingotml/ingot/tensor"
)

// mlxReference is what mlx-lm's own model produced from the mlx-lm-written checkpoint:
// greedy tokens from the prompt and the float32 logits row of each step.
type mlxReference struct {
	Prompt []int32     `json:"prompt"`
	Tokens []int32     `json:"tokens"`
	Logits [][]float32 `json:"logits"`
}

// greedy decodes n tokens from prompt with caches (mlx-lm's plain path), returning
// the tokens and the last-position logits row of each step.
func greedy(t *testing.T, m *Model, prompt []int32, n int) ([]int32, [][]float32) {
	t.Helper()
	caches := m.MakeCache(cache.Eager)
	in := tensor.FromInt32(m.g, prompt, 1, len(prompt))
	var toks []int32
	var rows [][]float32
	for len(toks) < n {
		logits := m.Forward(in, caches)
		last := tensor.SliceAxis(logits, 1, logits.Dim(1)-1, logits.Dim(1))
		row, err := last.Float32s()
		require.NoError(t, err)
		next := golden.Argmax(row)
		toks, rows = append(toks, next), append(rows, row)
		in = tensor.FromInt32(m.g, []int32{next}, 1, 1)
	}
	return toks, rows
}

// TestMLXCheckpointReproducesMLX loads the checkpoint mlx-lm wrote (4-bit group 32,
// 8-bit routers, mlx-lm names, an index) and reproduces mlx-lm's 24 greedy tokens
// exactly and its logits rows within float32 noise (1e-4 on logits of magnitude ~1-3;
// measured 1.2e-5). It depends on mlx-lm's q/k normalisation epsilon (see constants):
// with HF's, row 0 is off by 0.75 and the first token differs.
func TestMLXCheckpointReproducesMLX(t *testing.T) {
	dir := filepath.Join(golden.MLXRoot(), "mlx_q4g32_12l")
	raw, err := os.ReadFile(filepath.Join(dir, "mlx_reference.json"))
	require.NoError(t, err)
	var ref mlxReference
	require.NoError(t, json.Unmarshal(raw, &ref))
	g := graph.NewCPU(graph.Options{})
	m := loadModel(t, g, dir, nn.Options{})
	toks, rows := greedy(t, m, ref.Prompt, len(ref.Tokens))
	worst := 0.0
	for i := range rows {
		worst = math.Max(worst, golden.MaxDiff(t, ref.Logits[i], rows[i]))
	}
	t.Logf("max |logit - mlx| over %d steps: %.3g", len(rows), worst)
	require.Equal(t, ref.Tokens, toks)
	require.Less(t, worst, 1e-4)
}

// dequantizedCopy writes dir's checkpoint with every quantized module expanded to
// float32 (the values the quantized layers stand for) and no quantization block.
func dequantizedCopy(t *testing.T, dir string) string {
	t.Helper()
	ck, err := checkpoint.OpenCheckpoint(dir)
	require.NoError(t, err)
	defer ck.Close()
	var out []checkpoint.WriteTensor
	for _, name := range ck.Names() {
		module, q := strings.CutSuffix(name, ".weight")
		if !q || !ck.Quantized(module) {
			if strings.HasSuffix(name, ".scales") || strings.HasSuffix(name, ".biases") {
				continue
			}
			b, info, err := ck.Bytes(name)
			require.NoError(t, err)
			out = append(out, checkpoint.WriteTensor{Name: name, DType: info.DType, Shape: info.Shape, Data: b})
			continue
		}
		spec, _ := ck.Quant.For(module)
		qt := &checkpoint.QuantizedTensor{Bits: spec.Bits, GroupSize: spec.GroupSize}
		wb, winfo, err := ck.Bytes(module + ".weight")
		require.NoError(t, err)
		qt.Weight = make([]uint32, len(wb)/4)
		for i := range qt.Weight {
			qt.Weight[i] = binary.LittleEndian.Uint32(wb[4*i:])
		}
		var sinfo checkpoint.TensorInfo
		qt.Scales, sinfo, err = ck.Bytes(module + ".scales")
		require.NoError(t, err)
		qt.Biases, _, err = ck.Bytes(module + ".biases")
		require.NoError(t, err)
		qt.ScaleType = sinfo.DType
		qt.Shape = append(slices.Clone(winfo.Shape[:len(winfo.Shape)-1]), sinfo.Shape[len(sinfo.Shape)-1]*spec.GroupSize)
		v, err := qt.Dequantize()
		require.NoError(t, err)
		b := make([]byte, 4*len(v))
		for i, x := range v {
			binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
		}
		out = append(out, checkpoint.WriteTensor{Name: name, DType: checkpoint.F32, Shape: qt.Shape, Data: b})
	}
	var cfg map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(ck.Config, &cfg))
	delete(cfg, "quantization")
	delete(cfg, "quantization_config")
	raw, err := json.Marshal(cfg)
	require.NoError(t, err)
	dst := filepath.Join(t.TempDir(), "dequantized")
	format := ck.Format() // the source's layout tag, kept
	if format == "" {
		format = checkpoint.KeepFormat
	}
	require.NoError(t, checkpoint.WriteCheckpoint(dst, raw, out, checkpoint.WriteOptions{Format: format}))
	return dst
}

// requireDequantizedMatch requires the quantized checkpoint in dir to decode gm's first
// prompt as the float model of its dequantized weights does: logits within 1e-4 at
// every one of 6 greedy steps and the same tokens. It returns the worst difference.
func requireDequantizedMatch(t *testing.T, gm golden.Set, dir string) float64 {
	t.Helper()
	g := graph.NewCPU(graph.Options{})
	q := loadModel(t, g, dir, nn.Options{})
	f := loadModel(t, g, dequantizedCopy(t, dir), nn.Options{})
	prompt := gm.Cases[0].Tokens(t, gm.Dir, "input_ids")
	qt, qr := greedy(t, q, prompt, 6)
	ft, fr := greedy(t, f, prompt, 6)
	worst := 0.0
	for i := range qr {
		worst = math.Max(worst, golden.MaxDiff(t, fr[i], qr[i]))
	}
	require.Less(t, worst, 1e-4)
	require.Equal(t, ft, qt)
	return worst
}

// TestQuantizeHFLayout: checkpoint.QuantizeCheckpoint on a golden set as Hugging Face stores it
// (zero-centred norms, [C, 1, K] conv, per-expert MLPs) keeps the source's format tag,
// and the quantized model equals the float model of the dequantized weights. (The
// output was once tagged "mlx" and .scales taken as mlx-lm's layout: the loader read
// the zero-centred norms as 1 + w, and the logits were off by up to 0.7.)
func TestQuantizeHFLayout(t *testing.T) {
	for _, gm := range goldenModels(t) {
		t.Run(gm.Name, func(t *testing.T) {
			src, err := checkpoint.OpenCheckpoint(gm.Dir)
			require.NoError(t, err)
			defer src.Close()
			dir := filepath.Join(t.TempDir(), "q")
			require.NoError(t, checkpoint.QuantizeCheckpoint(src, dir, checkpoint.QuantizeOptions{
				Default: checkpoint.QuantSpec{Bits: 8, GroupSize: 32}, ScaleType: checkpoint.F32}))
			ck, err := checkpoint.OpenCheckpoint(dir)
			require.NoError(t, err)
			require.Equal(t, src.Format(), ck.Format(), "the layout tag is the source's")
			require.NoError(t, ck.Close())
			requireDequantizedMatch(t, gm, dir)
		})
	}
}

// quantizedGolden writes a golden set in mlx-lm's layout (switch_mlp experts, norms
// 1 + w, [C, K, 1] conv) and quantizes it with opt.
func quantizedGolden(t *testing.T, gm golden.Set, opt checkpoint.QuantizeOptions) string {
	t.Helper()
	src, err := checkpoint.OpenCheckpoint(writeCheckpoint(t, gm.Dir, mlxLayout(readAll(t, filepath.Join(gm.Dir, "model.safetensors")))))
	require.NoError(t, err)
	defer src.Close()
	if opt.Modules != nil {
		opt.Modules = checkpoint.RouterOverrides(src.Names())
	}
	dir := filepath.Join(t.TempDir(), "q")
	require.NoError(t, checkpoint.QuantizeCheckpoint(src, dir, opt))
	return dir
}

// TestQuantizedGolden: for every golden model and several (bits, group, scale dtype)
// choices, including a mixed checkpoint with 8-bit routers, the quantized model's
// logits equal those of the float model whose weights are the dequantized values,
// and the greedy tokens match. Both models read the same numbers; only the order of
// the sums differs (group-wise in the quant kernels), so 1e-4 holds for bfloat16
// scales as for float32 ones: the scales' precision is in both models' weights.
func TestQuantizedGolden(t *testing.T) {
	for _, gm := range goldenModels(t) {
		for _, c := range []struct {
			bits, group int
			st          checkpoint.DType
			routers     bool
		}{{4, 64, checkpoint.F32, false}, {6, 64, checkpoint.BF16, false}, {8, 32, checkpoint.F16, false}, {3, 128, checkpoint.F32, false}, {4, 32, checkpoint.BF16, true}} {
			name := fmt.Sprintf("%s/%d-%d-%s-routers%v", gm.Name, c.bits, c.group, c.st, c.routers)
			t.Run(name, func(t *testing.T) {
				opt := checkpoint.QuantizeOptions{Default: checkpoint.QuantSpec{Bits: c.bits, GroupSize: c.group}, ScaleType: c.st}
				if c.routers {
					opt.Modules = map[string]*checkpoint.QuantSpec{}
				}
				dir := quantizedGolden(t, gm, opt)
				ck, err := checkpoint.OpenCheckpoint(dir)
				require.NoError(t, err)
				quantized, experts := 0, false
				for _, n := range ck.Names() {
					if strings.HasSuffix(n, ".scales") {
						quantized++
						experts = experts || strings.Contains(n, "switch_mlp")
					}
				}
				requireSkipRule(t, ck, c.group, c.routers)
				require.NoError(t, ck.Close())
				worst := requireDequantizedMatch(t, gm, dir)
				t.Logf("%d quantized modules (experts: %v); max |quantized - dequantized float| = %.3g", quantized, experts, worst)
			})
		}
	}
}

// TestQuantizedShardedEqualsSingle: one file, shards with an index and shards without
// one give bit-identical logits.
func TestQuantizedShardedEqualsSingle(t *testing.T) {
	gm := goldenModels(t)[0]
	var logits [][]float32
	for _, w := range []checkpoint.WriteOptions{{}, {ShardBytes: 50_000}, {ShardBytes: 80_000, NoIndex: true}} {
		dir := quantizedGolden(t, gm, checkpoint.QuantizeOptions{Default: checkpoint.QuantSpec{Bits: 4, GroupSize: 32}, ScaleType: checkpoint.BF16, Write: w})
		files, _ := filepath.Glob(filepath.Join(dir, "model*.safetensors"))
		if w.ShardBytes > 0 {
			require.Greater(t, len(files), 2)
		}
		g := graph.NewCPU(graph.Options{})
		m := loadModel(t, g, dir, nn.Options{})
		_, rows := greedy(t, m, gm.Cases[0].Tokens(t, gm.Dir, "input_ids"), 4)
		flat := slices.Concat(rows...)
		logits = append(logits, flat)
	}
	require.Equal(t, logits[0], logits[1], "sharded with an index")
	require.Equal(t, logits[0], logits[2], "sharded without an index")
}

// TestQuantizedWiderModel3Bit128: the golden sets are too narrow for group 128 (hidden
// 64), so 3 bits / group 128 is also checked on the mlx-lm checkpoint's model (hidden
// 128), re-quantized from its dequantized weights with 8-bit routers.
func TestQuantizedWiderModel3Bit128(t *testing.T) {
	float := dequantizedCopy(t, filepath.Join(golden.MLXRoot(), "mlx_q4g32_12l"))
	src, err := checkpoint.OpenCheckpoint(float)
	require.NoError(t, err)
	defer src.Close()
	dir := filepath.Join(t.TempDir(), "q3")
	require.NoError(t, checkpoint.QuantizeCheckpoint(src, dir, checkpoint.QuantizeOptions{Default: checkpoint.QuantSpec{Bits: 3, GroupSize: 128},
		Modules: checkpoint.RouterOverrides(src.Names()), ScaleType: checkpoint.F32}))
	g := graph.NewCPU(graph.Options{})
	q := loadModel(t, g, dir, nn.Options{})
	f := loadModel(t, g, dequantizedCopy(t, dir), nn.Options{})
	prompt := []int32{1, 2, 3, 4, 5, 6, 7, 8}
	qt, qr := greedy(t, q, prompt, 8)
	ft, fr := greedy(t, f, prompt, 8)
	worst := 0.0
	for i := range qr {
		worst = math.Max(worst, golden.MaxDiff(t, fr[i], qr[i]))
	}
	t.Logf("max |quantized - dequantized float| = %.3g", worst)
	require.Less(t, worst, 1e-4)
	require.Equal(t, ft, qt)
}

// requireSkipRule asserts that every float matrix the quantized checkpoint ck keeps
// in float has an input width that is not a multiple of its group (64 for routers when
// routers is set), or, for a switch_mlp stack, a projection whose width is not: a set
// whose widths fit no group rightly quantizes nothing.
func requireSkipRule(t *testing.T, ck *checkpoint.Checkpoint, group int, routers bool) {
	t.Helper()
	width := func(n string) int {
		info, _, _ := ck.Info(n)
		return info.Shape[len(info.Shape)-1]
	}
	for _, n := range ck.Names() {
		module, ok := strings.CutSuffix(n, ".weight")
		info, _, _ := ck.Info(n)
		if _, float := checkpoint.EngineDType(info.DType); !ok || !float || ck.Quantized(module) || len(info.Shape) < 2 {
			continue
		}
		g := group
		if routers && (strings.HasSuffix(module, "mlp.gate") || strings.HasSuffix(module, "mlp.shared_expert_gate")) {
			g = 64
		}
		switch prefix, _, stacked := strings.Cut(n, "switch_mlp."); {
		case stacked:
			fits := true
			for _, proj := range []string{"gate_proj", "up_proj", "down_proj"} {
				fits = fits && width(prefix+"switch_mlp."+proj+".weight")%g == 0
			}
			require.False(t, fits, "%s left in float though all three projections fit group %d", n, g)
		case len(info.Shape) == 2:
			require.NotZero(t, width(n)%g, "%s left in float though its width %d is a multiple of %d", n, width(n), g)
		}
	}
}
