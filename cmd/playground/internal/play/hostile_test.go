package play

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/nn/models"
)

// hostileConfigs are the audit's pasted configs: the Qwen3.5-0.8B config with one size
// at 2^24 (or 65,536 layers). Each made the engine run out of memory or panic.
func hostileConfigs(t testing.TB) map[string]string {
	raw, err := os.ReadFile("../../../decode/testdata/qwen3_5_0.8b/config.json")
	require.NoError(t, err)
	out := map[string]string{}
	for name, edit := range map[string]func(tc map[string]any){
		"vocab_size":             func(tc map[string]any) { tc["vocab_size"] = 1 << 24 },
		"heads x head_dim":       func(tc map[string]any) { tc["num_attention_heads"], tc["head_dim"] = 1<<12, 1<<12 },
		"head_dim":               func(tc map[string]any) { tc["head_dim"] = 1 << 24 },
		"linear_num_value_heads": func(tc map[string]any) { tc["linear_num_value_heads"] = 1 << 24 },
		"linear_value_head_dim":  func(tc map[string]any) { tc["linear_value_head_dim"] = 1 << 24 },
		"linear_key_head_dim":    func(tc map[string]any) { tc["linear_key_head_dim"] = 1 << 24 },
		"linear_conv_kernel_dim": func(tc map[string]any) { tc["linear_conv_kernel_dim"] = 1 << 24 },
		"65536 layers": func(tc map[string]any) {
			tc["num_hidden_layers"] = 65536
			delete(tc, "layer_types")
		},
	} {
		var m map[string]any
		require.NoError(t, json.Unmarshal(raw, &m))
		edit(m["text_config"].(map[string]any))
		b, err := json.Marshal(m)
		require.NoError(t, err)
		out[name] = string(b)
	}
	return out
}

// TestHostileModelsRefused: a pasted config or random shape that cannot fit is refused
// by the memory estimate cmd/decode applies, or by decode's flag ranges, before
// anything is built (each used to crash the engine: Go out of memory, a makeslice
// panic, or a 65,536-layer build that cancel did not stop); nothing is emitted.
func TestHostileModelsRefused(t *testing.T) {
	var ups []Update
	env := Env{Emit: func(u Update) { ups = append(ups, u) }}
	for name, cfg := range hostileConfigs(t) {
		start := time.Now()
		err := Run(context.Background(), RunSpec{Model: ModelSpec{Config: cfg}, Runs: []string{"lazy"}, Tokens: 1000, Limit: 30000}, env)
		require.Error(t, err, name)
		require.Regexp(t, `^(config\.json: num_hidden_layers 65536: the playground takes at most 4096 layers|config\.json: .*|the model('s size overflows a 64-bit count| needs ~.* which exceeds this machine's memory limit of 1\.07 GB; use fewer layers, experts or tokens, or a smaller config))`, err.Error(), name)
		require.Less(t, time.Since(start), 10*time.Second, name)
	}
	for _, c := range []struct {
		spec ModelSpec
		want string
	}{
		{ModelSpec{Hidden: 1 << 24}, "hidden must be a multiple of 16 in 16..4096, not 16777216"},
		{ModelSpec{Experts: 1 << 24}, "experts must be in 2..512, not 16777216"},
		{ModelSpec{Layers: 65536}, "layers must be in 1..4096, not 65536"},
		{ModelSpec{Layers: -1}, "layers must be in 1..4096, not -1"},
		{ModelSpec{Layers: 4096, Hidden: 4096, Experts: 512}, "the model needs ~"},
	} {
		err := Run(context.Background(), RunSpec{Model: c.spec, Runs: []string{"lazy"}, Tokens: 1000, Limit: 30000}, env)
		require.ErrorContains(t, err, c.want, "%+v", c.spec)
		_, err = Predict(c.spec, 499000, 30000)
		if c.spec.Layers != 4096 {
			require.EqualError(t, err, c.want)
		}
	}
	require.Empty(t, ups, "refused before anything ran")
	err := Run(context.Background(), RunSpec{Model: ModelSpec{}, Runs: []string{"lazy"}, Tokens: 1 << 40, Limit: 30000}, env)
	require.EqualError(t, err, "tokens must be in 8..100000000, not 1099511627776")
}

// TestPredictRefusesLimitBelowBaseline: a limit under the baseline is refused with
// cmd/decode's message (the page showed crash tokens -16, -20 and -25 at limit 0).
func TestPredictRefusesLimitBelowBaseline(t *testing.T) {
	_, err := Predict(ModelSpec{}, 499000, 0)
	require.EqualError(t, err, "the limit must be at least 1, not 0")
	_, err = Predict(ModelSpec{}, 499000, 1000)
	require.EqualError(t, err, "the run's limit 1000 is below this model's baseline: it needs ~1,203 buffer objects before its first token (raise the limit)")
	_, err = Predict(ModelSpec{}, 500, 30000)
	require.EqualError(t, err, "the limit 500 is below this model's baseline: it needs ~1,203 buffer objects before its first token (raise the limit)")
	for _, typ := range Types() {
		p, err := Predict(ModelSpec{ModelType: typ}, 499000, 30000)
		require.NoError(t, err, typ)
		require.GreaterOrEqual(t, p.Crash, 0)
		require.GreaterOrEqual(t, p.RunCrash, 0)
	}
	err = Run(context.Background(), RunSpec{Model: ModelSpec{}, Runs: []string{"lazy"}, Tokens: 100, Limit: 1000}, Env{Emit: func(Update) {}})
	require.EqualError(t, err, "the limit 1000 is below this model's baseline: it needs ~1,203 buffer objects before its first token (raise the limit)")
}

// TestEveryModelTypeOffered: the page offers every registered model type (qwen3 was
// missing), and each runs.
func TestEveryModelTypeOffered(t *testing.T) {
	require.Equal(t, models.Types(), Types())
	require.Contains(t, Types(), "qwen3")
	for _, typ := range Types() {
		var done []Update
		var log strings.Builder
		err := Run(context.Background(), RunSpec{Model: ModelSpec{ModelType: typ, Layers: 4}, Runs: []string{"lazy"}, Tokens: 16, Limit: 30000},
			Env{Emit: func(u Update) {
				log.WriteString(u.Log)
				if u.Type == "done" {
					done = append(done, u)
				}
			}})
		require.NoError(t, err, typ)
		require.Len(t, done, 1, typ)
		require.Contains(t, log.String(), "[model] "+typ+": layers=4 ", typ)
	}
}

// TestCancelledBeforeTheFirstStep: a cancel that arrives while the model is built stops
// the run before its first step (a 4,096-layer model's build is the longest wait).
func TestCancelledBeforeTheFirstStep(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var ups []Update
	env := Env{Emit: func(u Update) { ups = append(ups, u) }}
	cancel()
	require.NoError(t, Run(ctx, RunSpec{Model: ModelSpec{Layers: 4096}, Runs: []string{"lazy", "eager"}, Tokens: 1000, Limit: 499000}, env))
	require.Equal(t, []Update{{Type: "end"}}, ups)
}
