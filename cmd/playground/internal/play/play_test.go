package play

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPredictMatchesTheCLI: the default model and the Qwen3.5-0.8B config give the
// lines `decode --predict-only` prints (README: 10,370 and 29,326).
func TestPredictMatchesTheCLI(t *testing.T) {
	p, err := Predict(ModelSpec{}, 499000, 60000)
	require.NoError(t, err)
	require.Equal(t, "[model] qwen3_5_moe: layers=50 (ssm=49 attn=1) experts=8 hidden=64; 953 buffers after load device=cpu limit=499000 (default)\n"+
		"[baseline] 953 buffers after load + 5 per layer x 50 layers of cache state = 1,203 live buffers once decoding begins\n"+
		"[predict] leak ~48 objects/token -> resource-limit crash near token ~10,370 (if unpatched)\n", p.Text)
	require.Equal(t, (60000-1203)/48, p.RunCrash)
	cfg, err := os.ReadFile("../../../decode/testdata/qwen3_5_0.8b/config.json")
	require.NoError(t, err)
	p, err = Predict(ModelSpec{Config: string(cfg)}, 499000, 60000)
	require.NoError(t, err)
	require.Equal(t, "[model] qwen3_5_text: layers=24 (ssm=18 attn=6) experts=0 hidden=1024; 323 buffers after load device=cpu limit=499000 (default)\n"+
		"[baseline] 323 buffers after load + 5 per layer x 24 layers of cache state = 443 live buffers once decoding begins\n"+
		"[predict] leak ~17 objects/token -> resource-limit crash near token ~29,326 (if unpatched)\n", p.Text)
	require.Equal(t, 18, p.GDN)
	require.Equal(t, 6, p.Attention)
	cfg, err = os.ReadFile("../../../decode/testdata/qwen3_next_80b/config.json")
	require.NoError(t, err)
	p, err = Predict(ModelSpec{Config: string(cfg)}, 499000, 60000)
	require.NoError(t, err)
	require.Contains(t, p.Text, "[predict] leak ~35 objects/token -> resource-limit crash near token ~14,227 (if unpatched)\n")
	require.Equal(t, 512, p.Experts)
	_, err = Predict(ModelSpec{Config: `{"model_type": "qwen3_5", "hidden_size": -1}`}, 499000, 60000)
	require.ErrorContains(t, err, "config.json: ")
	require.Equal(t, "4-bit g64", quantization(`{"quantization": {"bits": 4, "group_size": 64}}`))
}

// TestRunCrashesAndStops: a 12-layer lazy run crashes at the predicted token with
// MLX's message; eager stays flat; a cancelled run ends interrupted and starts no more.
func TestRunCrashesAndStops(t *testing.T) {
	var ups []Update
	env := Env{Emit: func(u Update) { ups = append(ups, u) }}
	spec := RunSpec{Model: ModelSpec{Layers: 12}, Runs: []string{"lazy", "eager"}, Tokens: 1000, Limit: 6000, Census: true}
	require.NoError(t, Run(context.Background(), spec, env))
	var done []Update
	for _, u := range ups {
		if u.Type == "done" {
			done = append(done, u)
		}
	}
	require.Len(t, done, 2)
	p, err := Predict(spec.Model, 499000, 6000)
	require.NoError(t, err)
	require.True(t, done[0].Crashed)
	require.Equal(t, p.RunCrash, done[0].CrashToken, "the prediction's baseline is the run's")
	require.Equal(t, "[metal::malloc] Resource limit (6000) exceeded.", done[0].CrashError)
	require.Contains(t, done[0].Census, "cache/lazy.go:")
	require.Contains(t, done[0].Census, "+10.00 nodes/token")
	require.Contains(t, done[0].Log, "[verdict] CRASH REPRODUCED: [metal::malloc] Resource limit (6000) exceeded. at token ")
	require.Equal(t, "flat", done[1].Verdict)
	require.InDelta(t, 0, done[1].Slope, 1e-9)
	require.Equal(t, 2, strings.Count(done[1].Chart, "<polyline"), "the lazy and the eager line")
	require.Equal(t, "end", ups[len(ups)-1].Type)
	ups = nil
	err = Run(context.Background(), RunSpec{Model: ModelSpec{Config: "{}"}, Runs: []string{"lazy", "attention-only"}, Tokens: 100, Limit: 6000}, env)
	require.EqualError(t, err, "attention-only is the random model's control: clear the pasted config.json, or leave it out")
	require.Empty(t, ups, "refused before anything ran")

	ctx, cancel := context.WithCancel(context.Background())
	ups = nil
	cancelAt := 0
	env.Emit = func(u Update) {
		ups = append(ups, u)
		if u.Type == "sample" && u.Tokens >= 300 && cancelAt == 0 {
			cancelAt = u.Tokens
			cancel()
		}
	}
	spec.Limit = 499000
	require.NoError(t, Run(ctx, spec, env))
	last := ups[len(ups)-2]
	require.Equal(t, "done", last.Type)
	require.True(t, last.Interrupted)
	require.Equal(t, 0, last.Run, "the eager run never started")
	require.Equal(t, 375, cancelAt, "samples every 1000/8 tokens")
	require.Equal(t, cancelAt, last.Tokens, "it stops at the next step")
	require.Contains(t, last.Log, "[interrupted] stopped at token 375; the verdict below is for the run so far\n")
}

// BenchmarkDecode is the playground's decode speed (tok/s) on the page's runs: run it
// natively and under GOOS=js GOARCH=wasm (go_js_wasm_exec, Node.js) to compare.
func BenchmarkDecode(b *testing.B) {
	for _, c := range []struct {
		name   string
		run    string
		layers int
		census bool
	}{
		{"warmup", "eager", 12, false},
		{"eager12", "eager", 12, false},
		{"lazy12", "lazy", 12, false},
		{"eager50", "eager", 50, false},
		{"eager50census", "eager", 50, true},
	} {
		b.Run(c.name, func(b *testing.B) {
			var tps float64
			for b.Loop() {
				spec := RunSpec{Model: ModelSpec{Layers: c.layers}, Runs: []string{c.run}, Tokens: 600, Limit: 499000, Census: c.census}
				require.NoError(b, Run(context.Background(), spec, Env{Emit: func(u Update) {
					if u.Type == "done" {
						tps = u.TokPerSec
					}
				}}))
			}
			b.ReportMetric(tps, "tok/s")
		})
	}
}
