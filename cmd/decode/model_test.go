package main

import (
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestModelTypes: every repro model type leaks (GDN layers - 1) per token on the batch
// path with the lazy bookkeeping, stays flat with the eager one, and emits the same
// tokens both ways.
func TestModelTypes(t *testing.T) {
	for _, typ := range []string{"qwen3_5", "qwen3_next"} {
		args := []string{"--model-type", typ, "--layers", "12", "--tokens", "300", "--report-every", "25"}
		code, out, j := decode(t, args...)
		require.Equal(t, exitLeak, code, out)
		require.Equal(t, 10.0, j["slope_per_token"], out) // 11 GDN layers - 1
		require.Contains(t, out, "[model] "+typ+": layers=12 (ssm=11 attn=1)")
		code, out, je := decode(t, append(args, "--cache", "eager")...)
		require.Equal(t, exitFlat, code, out)
		require.LessOrEqual(t, math.Abs(je["slope_per_token"].(float64)), 0.01)
		require.Equal(t, tokens(j), tokens(je), "%s: the fix changes no token", typ)
	}
}

// TestConfigFlag: --config builds the file's layer structure (a flat qwen3_next config
// with a dense layer, a nested qwen3_5_moe one); the slope is its GDN count - 1.
func TestConfigFlag(t *testing.T) {
	for dir, want := range map[string]string{
		"qwen3_next_tiny":  "[model] qwen3_next from testdata/qwen3_next_tiny/config.json: layers=8 (ssm=6 attn=2) interval=4 experts=8 hidden=64",
		"qwen3_5_moe_tiny": "[model] qwen3_5_moe_text from testdata/qwen3_5_moe_tiny/config.json: layers=8 (ssm=6 attn=2) interval=4 experts=8 hidden=64",
	} {
		path := filepath.Join("testdata", dir, "config.json")
		code, out, j := decode(t, "--config", path, "--tokens", "200", "--report-every", "25")
		require.Equal(t, exitLeak, code, out)
		require.Contains(t, out, want)
		require.Equal(t, 5.0, j["slope_per_token"], out)
		require.Contains(t, out, "[predict] leak ~5 objects/token")
		code, out, _ = decode(t, "--config", path, "--tokens", "200", "--report-every", "25", "--hidden", "32", "--experts", "4")
		require.Equal(t, exitLeak, code, out)
		require.Contains(t, out, "experts=4 hidden=32")
	}
}

func TestModelFlagErrors(t *testing.T) {
	next := filepath.Join("testdata", "qwen3_next_tiny", "config.json")
	dense := filepath.Join(t.TempDir(), "config.json")
	require.NoError(t, os.WriteFile(dense, []byte(`{"model_type": "qwen3_5_text", "vocab_size": 128, "hidden_size": 64,
		"num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
		"linear_num_key_heads": 2, "linear_num_value_heads": 4, "linear_key_head_dim": 16,
		"linear_value_head_dim": 16, "linear_conv_kernel_dim": 4, "intermediate_size": 64}`), 0o644))
	unknown := filepath.Join(t.TempDir(), "config.json")
	require.NoError(t, os.WriteFile(unknown, []byte(`{"model_type": "qwen3_5_text", "sliding_window_pattern": 4}`), 0o644))
	for _, c := range []struct {
		want string
		args []string
	}{
		{"--layers does not apply with --config", []string{"--config", next, "--layers", "8"}},
		{"--model-type does not apply with --config", []string{"--config", next, "--model-type", "qwen3_5"}},
		{`--model-type must be one of qwen3, qwen3_5, qwen3_5_moe, qwen3_5_moe_text, qwen3_5_text, qwen3_next, not "llama"`, []string{"--model-type", "llama"}},
		{"--experts does not apply to --model-type qwen3_5 (dense MLPs)", []string{"--model-type", "qwen3_5", "--experts", "4"}},
		{"--experts must be in 2..512 for qwen3_next (top-2 routing), not 1", []string{"--model-type", "qwen3_next", "--experts", "1"}},
		{"--experts: " + dense + " describes a dense model", []string{"--config", dense, "--experts", "4"}},
		{"no such file or directory", []string{"--config", filepath.Join(t.TempDir(), "missing.json")}},
		{"sliding_window_pattern: unknown to model type", []string{"--config", unknown}},
		{"num_experts_per_tok: must be in [1, num_experts=1], got 2", []string{"--config", next, "--experts", "1"}},
	} {
		usage(t, c.want, append(c.args, "--tokens", "8")...)
	}
}
