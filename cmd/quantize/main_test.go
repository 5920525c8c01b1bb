package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/checkpoint"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/internal/golden"
	"github.com/ingotml/ingot/nn/models"
	"github.com/ingotml/ingot/nn/qwen3"
	"github.com/ingotml/ingot/nn/qwen35"
	"github.com/ingotml/ingot/tensor"
)

func cmd(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// goldenSets returns every golden set under the root (see golden.Sets).
func goldenSets(t *testing.T) []string {
	t.Helper()
	dirs, err := golden.Sets()
	require.NoError(t, err)
	return dirs
}

// logits runs the prompt through the checkpoint in dir and returns the last logits.
func logits(t *testing.T, dir string, prompt []int32) []float32 {
	t.Helper()
	g := graph.NewCPU(graph.Options{})
	m, err := models.Load(dir, g, nn.Options{})
	require.NoError(t, err)
	v, err := m.Forward(tensor.FromInt32(g, prompt, 1, len(prompt)), m.MakeCache(cache.Eager)).Float32s()
	require.NoError(t, err)
	return v[len(v)-m.VocabSize():]
}

// TestQuantizeGolden: every golden model, quantized by the command (sharded), loads
// through the model registry with every expert stack and router quantized as asked
// and its norms in mlx-lm's 1 + w form (a Qwen3 model: its linears quantized, its
// norms as stored); a dense model at 8 bits keeps its logits.
func TestQuantizeGolden(t *testing.T) {
	for _, src := range goldenSets(t) {
		t.Run(filepath.Base(src), func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "q")
			st, err := os.Stat(filepath.Join(src, "model.safetensors"))
			require.NoError(t, err)
			shard := strconv.FormatInt(st.Size()/64, 10) // several shards, whatever the set's size
			code, stdout, stderr := cmd("-in", src, "-out", out, "-bits", "4", "-group", "32", "-shard-size", shard)
			require.Equal(t, exitOK, code, stderr)
			require.True(t, strings.HasPrefix(stdout, "quantize: wrote "+out+": "), stdout)
			ck, err := checkpoint.OpenCheckpoint(out)
			require.NoError(t, err)
			defer ck.Close()
			require.Greater(t, len(ck.Files()), 1, "sharded")
			require.Equal(t, "mlx", ck.Format())
			require.Equal(t, checkpoint.QuantSpec{Bits: 4, GroupSize: 32}, ck.Quant.Default)
			typ, err := models.ModelType(ck.Config)
			require.NoError(t, err)
			if typ == qwen3.TypeQwen3 {
				checkDenseQwen3(t, src, ck, stdout)
				return
			}
			cfg, err := qwen35.ParseModelArgs(ck.Config)
			require.NoError(t, err)
			for i := range cfg.NumLayers {
				p := "model.layers." + strconv.Itoa(i) + ".mlp."
				// A module is quantized when its input width is a multiple of the group.
				h := cfg.HiddenSize%32 == 0
				if !cfg.IsSparse(i) {
					require.Equal(t, h, ck.Quantized(p+"gate_proj"), p)
					continue
				}
				stack := h && cfg.MoEIntermediateSize%32 == 0 // all three projections or none
				for _, proj := range []string{"gate_proj", "up_proj", "down_proj"} {
					require.Equal(t, stack, ck.Quantized(p+"switch_mlp."+proj), "%sswitch_mlp.%s", p, proj)
				}
				for _, router := range []string{"gate", "shared_expert_gate"} {
					require.Equal(t, cfg.HiddenSize%64 == 0, ck.Quantized(p+router), p+router)
					if ck.Quantized(p + router) {
						spec, ok := ck.Quant.For(p + router)
						require.True(t, ok)
						require.Equal(t, checkpoint.QuantSpec{Bits: 8, GroupSize: 64}, spec, p+router)
					}
				}
			}
			require.Contains(t, stdout, " modules quantized (4-bit g32 affine), ")
			require.Contains(t, stdout, ", "+strconv.Itoa(len(ck.Files()))+" files, ")

			// The norms hold 1 + w, as mlx-lm's sanitize leaves them (the loader adds
			// nothing to a file in mlx-lm's layout).
			in, err := checkpoint.OpenCheckpoint(src)
			require.NoError(t, err)
			defer in.Close()
			w, _, err := in.Float32("model.norm.weight")
			require.NoError(t, err)
			q, _, err := ck.Float32("model.norm.weight")
			require.NoError(t, err)
			for i := range w {
				require.Equal(t, float32(float64(w[i])+1), q[i], "model.norm.weight[%d]", i)
			}
			if cfg.IsMoE() {
				return // a router's choice can flip under quantization: no logit bound
			}
			eightBitClose(t, src)
		})
	}
}

// eightBitClose: a dense model at 8 bits keeps its logits within 2% of the float
// model's range (measured: 0.7%); a misread norm or layout would be far off.
func eightBitClose(t *testing.T, src string) {
	t.Helper()
	prompt := []int32{1, 2, 3, 4, 5}
	out8 := filepath.Join(t.TempDir(), "q8")
	code, _, stderr := cmd("-in", src, "-out", out8, "-bits", "8", "-group", "32", "-shard-size", "0")
	require.Equal(t, exitOK, code, stderr)
	want, got := logits(t, src, prompt), logits(t, out8, prompt)
	lo, hi := want[0], want[0]
	worst := 0.0
	for i := range want {
		lo, hi = min(lo, want[i]), max(hi, want[i])
		worst = max(worst, float64(abs(want[i]-got[i])))
	}
	require.Less(t, worst, 0.02*float64(hi-lo), "8-bit logits against float")
}

// checkDenseQwen3 checks the 4-bit copy ck of the Qwen3 checkpoint src: every linear
// whose input width is a multiple of the group quantized, every norm as stored (Qwen3
// has no zero-centred norm to rewrite), an lm_head only when untied; then the 8-bit
// copy's logits.
func checkDenseQwen3(t *testing.T, src string, ck *checkpoint.Checkpoint, stdout string) {
	t.Helper()
	cfg, err := qwen3.ParseHFConfig(ck.Config)
	require.NoError(t, err)
	in, err := checkpoint.OpenCheckpoint(src)
	require.NoError(t, err)
	defer in.Close()
	fits := func(w int) bool { return w%32 == 0 }
	h, inter, attn := fits(cfg.HiddenSize), fits(cfg.IntermediateSize), fits(cfg.NumHeads*cfg.HeadDim)
	for i := range cfg.NumLayers {
		p := "model.layers." + strconv.Itoa(i) + "."
		for m, want := range map[string]bool{"mlp.gate_proj": h, "mlp.up_proj": h, "mlp.down_proj": inter,
			"self_attn.q_proj": h, "self_attn.k_proj": h, "self_attn.v_proj": h, "self_attn.o_proj": attn} {
			require.Equal(t, want, ck.Quantized(p+m), p+m)
		}
		for _, n := range []string{"input_layernorm", "post_attention_layernorm", "self_attn.q_norm", "self_attn.k_norm"} {
			w, _, err := in.Float32(p + n + ".weight")
			require.NoError(t, err)
			q, _, err := ck.Float32(p + n + ".weight")
			require.NoError(t, err)
			require.Equal(t, w, q, p+n)
		}
	}
	_, _, head := ck.Info("lm_head.weight")
	require.Equal(t, !cfg.TieWordEmbeddings, head)
	require.Contains(t, stdout, " modules quantized (4-bit g32 affine), ")
	eightBitClose(t, src)
}

func abs(x float32) float32 {
	if x < 0 {
		return -x
	}
	return x
}

// TestQuantizeRefuses: bad flags and unusable inputs exit 64 with a clear message and
// write nothing.
func TestQuantizeRefuses(t *testing.T) {
	src := goldenSets(t)[0]
	tmp := t.TempDir()
	full := filepath.Join(tmp, "full")
	require.NoError(t, os.MkdirAll(full, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(full, "x"), nil, 0o644))
	out := filepath.Join(tmp, "out")
	mlx := filepath.Join(golden.MLXRoot(), "mlx_q4g32_12l")
	for _, c := range []struct {
		want string
		args []string
	}{
		{"-bits must be 2, 3, 4, 5, 6 or 8, not 7", []string{"-in", src, "-out", out, "-bits", "7"}},
		{"-group must be 32, 64 or 128, not 48", []string{"-in", src, "-out", out, "-group", "48"}},
		{"-router-bits must be 0, 2, 3, 4, 5, 6 or 8, not 1", []string{"-in", src, "-out", out, "-router-bits", "1"}},
		{`-shard-size: "5 parsecs": want a whole number of bytes, such as 5GB, 500MB or 0`, []string{"-in", src, "-out", out, "-shard-size", "5 parsecs"}},
		{`-scale-dtype must be float32, float16, bfloat16 or auto, not "f8"`, []string{"-in", src, "-out", out, "-scale-dtype", "f8"}},
		{"-in (or -random) and -out are required", []string{"-in", src}},
		{"-random and -in exclude each other", []string{"-in", src, "-random", "config.json", "-out", out}},
		{`-dtype must be float32, float16 or bfloat16, not "int8"`, []string{"-random", "config.json", "-dtype", "int8", "-out", out}},
		{"-out " + full + " is not empty", []string{"-in", src, "-out", full}},
		{"-in " + mlx + " is already quantized (its config.json has a quantization block)", []string{"-in", mlx, "-out", out}},
		{"-in: checkpoint " + filepath.Join(tmp, "none", "config.json") + ": cannot read the model config: open " + filepath.Join(tmp, "none", "config.json") + ": no such file or directory",
			[]string{"-in", filepath.Join(tmp, "none"), "-out", out}},
	} {
		code, stdout, stderr := cmd(c.args...)
		require.Equal(t, exitUsage, code, "%v: %s%s", c.args, stdout, stderr)
		require.Equal(t, "quantize: usage: "+c.want+"\n", stderr, c.args)
		_, err := os.Stat(out)
		require.ErrorIs(t, err, os.ErrNotExist, "%v wrote nothing", c.args)
	}
}

// TestRandomCheckpoint: -random writes a checkpoint of a config's structure (a sparse
// model, so experts are written too) that loads as the model qwen35.NewRandom builds
// for the same seed: at float32 the logits are bit-identical; at bfloat16 it loads,
// and quantizes at 4 bits.
func TestRandomCheckpoint(t *testing.T) {
	cfg, err := qwen35.ReproConfig(nn.ReproOptions{Layers: 4})
	require.NoError(t, err)
	raw, err := cfg.MarshalHF()
	require.NoError(t, err)
	tmp := t.TempDir()
	cfgPath := filepath.Join(tmp, "config.json")
	require.NoError(t, os.WriteFile(cfgPath, raw, 0o644))
	prompt := []int32{3, 1, 4, 1, 5, 9}

	f32 := filepath.Join(tmp, "f32")
	code, stdout, stderr := cmd("-random", cfgPath, "-dtype", "float32", "-seed", "7", "-out", f32)
	require.Equal(t, exitOK, code, stderr)
	require.True(t, strings.HasPrefix(stdout, "quantize: wrote "+f32+": "), stdout)
	g := graph.NewCPU(graph.Options{})
	ref, err := qwen35.NewRandom(cfg, g, 7, nn.Options{})
	require.NoError(t, err)
	want, err := ref.Forward(tensor.FromInt32(g, prompt, 1, len(prompt)), ref.MakeCache(cache.Eager)).Float32s()
	require.NoError(t, err)
	require.Equal(t, want[len(want)-cfg.VocabSize:], logits(t, f32, prompt))

	bf16 := filepath.Join(tmp, "bf16")
	code, _, stderr = cmd("-random", cfgPath, "-seed", "7", "-out", bf16)
	require.Equal(t, exitOK, code, stderr)
	ck, err := checkpoint.OpenCheckpoint(bf16)
	require.NoError(t, err)
	info, _, ok := ck.Info("model.embed_tokens.weight")
	require.True(t, ok)
	require.Equal(t, checkpoint.BF16, info.DType)
	require.NoError(t, ck.Close())
	require.Len(t, logits(t, bf16, prompt), cfg.VocabSize)
	q4 := filepath.Join(tmp, "q4")
	code, _, stderr = cmd("-in", bf16, "-out", q4, "-bits", "4", "-group", "32")
	require.Equal(t, exitOK, code, stderr)
	require.Len(t, logits(t, q4, prompt), cfg.VocabSize)
}
