package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/internal/golden"
)

// TestQwen3Control: the dense Qwen3 family, every layer attention, is the control that
// never leaks, through the registry alone: its random repro model, its golden
// checkpoints (--model) and their config.json (--config) stay flat on the lazy path,
// and --predict-only predicts no leak with 5 cache buffers per attention layer and
// the token array: the run's measured baseline.
func TestQwen3Control(t *testing.T) {
	args := []string{"--model-type", "qwen3", "--layers", "12", "--tokens", "300", "--report-every", "25"}
	code, out, j := decode(t, args...)
	require.Equal(t, exitFlat, code, out)
	require.InDelta(t, 0, j["slope_per_token"].(float64), 1e-9, out)
	require.Contains(t, out, "[model] qwen3: layers=12 (ssm=0 attn=12)")
	require.Contains(t, out, "[predict] 0 GDN layers -> no leak expected\n")
	code, out, je := decode(t, append(args, "--cache", "eager")...)
	require.Equal(t, exitFlat, code, out)
	require.Equal(t, tokens(j), tokens(je), "the policy changes no token")
	pred := predictOnlyRun(t, "--model-type", "qwen3", "--layers", "12")
	require.Contains(t, pred, "[predict] 0 GDN layers -> no leak expected\n")
	require.Contains(t, pred, " + 5 per layer x 12 layers of cache state + 1 (the token array each step feeds the next) = ")
	require.Equal(t, predictedBaseline(t, pred), int(j["baseline_live"].(float64)), "%s\n%s", pred, out)
	// The described cache buffers per layer are what a run holds: between 12 and 6
	// layers, the measured baselines differ exactly as the predicted ones do.
	_, out6, j6 := decode(t, "--model-type", "qwen3", "--layers", "6", "--tokens", "48", "--report-every", "6")
	require.Equal(t, predictedBaseline(t, pred)-predictedBaseline(t, predictOnlyRun(t, "--model-type", "qwen3", "--layers", "6")),
		int(j["baseline_live"].(float64)-j6["baseline_live"].(float64)), out6)

	sets := 0
	for _, dir := range qwen3Sets(t) {
		sets++
		raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
		require.NoError(t, err)
		var cfg struct {
			Layers int `json:"num_hidden_layers"`
		}
		require.NoError(t, json.Unmarshal(raw, &cfg))
		n := cfg.Layers
		code, out, j := decode(t, "--model", dir, "--tokens", "48", "--report-every", "6")
		require.Equal(t, exitFlat, code, out)
		require.InDelta(t, 0, j["slope_per_token"].(float64), 1e-9, out)
		require.Contains(t, out, fmt.Sprintf("[model] qwen3 from %s: layers=%d (ssm=0 attn=%d; mlp sparse=0 dense=%d) weights=float", dir, n, n, n))
		pred := predictOnlyRun(t, "--model", dir)
		require.Equal(t, line(t, out, "[predict] "), line(t, pred, "[predict] "))
		require.Equal(t, buffersAfterLoad(t, out), buffersAfterLoad(t, pred))
		require.Contains(t, pred, fmt.Sprintf(" + 5 per layer x %d layers of cache state + 1 (the token array each step feeds the next) = ", n))
		require.Equal(t, predictedBaseline(t, pred), int(j["baseline_live"].(float64)), "%s\n%s", pred, out)

		path := filepath.Join(dir, "config.json")
		code, out, j = decode(t, "--config", path, "--tokens", "48", "--report-every", "6")
		require.Equal(t, exitFlat, code, out)
		require.InDelta(t, 0, j["slope_per_token"].(float64), 1e-9, out)
		require.Contains(t, out, fmt.Sprintf("[model] qwen3 from %s: layers=%d (ssm=0 attn=%d)", path, n, n))
		require.Contains(t, out, "[predict] 0 GDN layers -> no leak expected\n")
	}
	if os.Getenv(golden.EnvVar) == "" {
		require.NotZero(t, sets, "the repository's golden data holds a qwen3 set")
	}
}

// TestQwen3FlagErrors: the repro flags that do not fit an attention-only dense model
// are refused.
func TestQwen3FlagErrors(t *testing.T) {
	for _, c := range []struct {
		want string
		args []string
	}{
		{"--experts does not apply to --model-type qwen3 (dense MLPs)", []string{"--model-type", "qwen3", "--experts", "4"}},
		{"--interval does not apply to --model-type qwen3 (every layer attends)", []string{"--model-type", "qwen3", "--interval", "4"}},
		{"--attention-only does not apply to --model-type qwen3 (every layer attends)", []string{"--model-type", "qwen3", "--attention-only"}},
	} {
		usage(t, c.want, append(c.args, "--tokens", "8")...)
	}
}

var baselineRe = regexp.MustCompile(`of cache state[^=]* = ([\d,]+) live buffers`)

// predictedBaseline reads the [baseline] line's live buffer count.
func predictedBaseline(t *testing.T, out string) int {
	t.Helper()
	m := baselineRe.FindStringSubmatch(out)
	require.NotNil(t, m, out)
	n, err := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
	require.NoError(t, err)
	return n
}

// qwen3Sets returns the golden sets whose config.json says model_type qwen3.
func qwen3Sets(t *testing.T) []string {
	t.Helper()
	dirs, err := golden.Sets()
	require.NoError(t, err)
	var out []string
	for _, dir := range dirs {
		raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
		require.NoError(t, err)
		var top struct {
			ModelType string `json:"model_type"`
		}
		require.NoError(t, json.Unmarshal(raw, &top), dir)
		if top.ModelType == "qwen3" {
			out = append(out, dir)
		}
	}
	return out
}
