package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/ingotml/ingot/nn/checkpoint"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/internal/golden"
	"github.com/ingotml/ingot/nn/models"
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
	m, err := models.Load(dir, g, models.Options{})
	require.NoError(t, err)
	v, err := m.Forward(tensor.FromInt32(g, prompt, 1, len(prompt)), m.MakeCache(cache.Eager)).Float32s()
	require.NoError(t, err)
	return v[len(v)-m.VocabSize():]
}

// TestQuantizeGolden: every golden model, quantized by the command (sharded), loads
// through the model registry with every expert stack and router quantized as asked
// and its norms in mlx-lm's 1 + w form; a dense model at 8 bits keeps its logits.
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
			// A dense model at 8 bits: its logits within 2% of the float model's range
			// (measured: 0.7%); a misread norm or layout would be far off.
			prompt := []int32{1, 2, 3, 4, 5}
			out8 := filepath.Join(t.TempDir(), "q8")
			code, _, stderr = cmd("-in", src, "-out", out8, "-bits", "8", "-group", "32", "-shard-size", "0")
			require.Equal(t, exitOK, code, stderr)
			want, got := logits(t, src, prompt), logits(t, out8, prompt)
			lo, hi := want[0], want[0]
			worst := 0.0
			for i := range want {
				lo, hi = min(lo, want[i]), max(hi, want[i])
				worst = max(worst, float64(abs(want[i]-got[i])))
			}
			require.Less(t, worst, 0.02*float64(hi-lo), "8-bit logits against float")
		})
	}
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
		{"-in and -out are required", []string{"-in", src}},
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
