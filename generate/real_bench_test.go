package generate_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/generate"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/internal/membw"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/checkpoint"
	"github.com/ingotml/ingot/nn/models"
)

// BenchmarkDecodeReal measures eager decode of random checkpoints of Qwen3.5-0.8B's
// structure, as cmd/decode --model runs them: bfloat16 weights (kept bfloat16), and
// 4-bit and 8-bit g64 quantized copies. It reports tokens/s, the weight bytes read per
// token times that rate (GB/s), and that as a share of the read bandwidth measured by
// membw.Probe just before (%probe), so the figure holds on a busy machine, and the
// process's CPU time per token (cpu-ms/token; on a machine other jobs load, wall time
// measures them too).
//
// The checkpoints are read from $INGOT_REAL_MODELS/{bf16,q4,q8}, which
// scripts/bench-real.sh makes once with cmd/quantize -random (about a minute, 2.7 GB);
// without it the benchmark is skipped. Run it with a fixed count of tokens, e.g.
// -bench DecodeReal -benchtime 100x.
func BenchmarkDecodeReal(b *testing.B) {
	dir := os.Getenv("INGOT_REAL_MODELS")
	if dir == "" {
		b.Skip("INGOT_REAL_MODELS is not set (scripts/bench-real.sh makes the models)")
	}
	for _, name := range []string{"q4", "q8", "bf16"} {
		b.Run(name, func(b *testing.B) {
			path := filepath.Join(dir, name)
			weights, err := weightBytes(path)
			if err != nil {
				b.Fatal(err)
			}
			g := graph.NewCPU(graph.Options{})
			m, err := models.Load(path, g, nn.Options{})
			if err != nil {
				b.Fatal(err)
			}
			bg := generate.NewBatchGenerator(m, cache.Eager, 0)
			if err := bg.Insert(generate.Request{Prompt: []int32{1, 2, 3, 4, 5, 6, 7, 8}, MaxTokens: b.N + 2}); err != nil {
				b.Fatal(err)
			}
			if _, err := bg.Next(); err != nil { // prefill
				b.Fatal(err)
			}
			probe := membw.Probe(1<<30, 0, 3)
			cpu0 := cpuTime()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				if _, err := bg.Next(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			cpu := cpuTime() - cpu0
			tps := float64(b.N) / b.Elapsed().Seconds()
			b.ReportMetric(tps, "tokens/s")
			b.ReportMetric(tps*float64(weights)/1e9, "GB/s")
			b.ReportMetric(100*tps*float64(weights)/probe, "%probe")
			b.ReportMetric(probe/1e9, "probeGB/s")
			// CPU time per token (both cores together): on a machine that other jobs
			// load, wall time measures them too, CPU time mostly this process.
			b.ReportMetric(float64(cpu.Microseconds())/1e3/float64(b.N), "cpu-ms/token")
		})
	}
}

// weightBytes is the size of every tensor in the checkpoint at dir: what one decode
// step reads (the tied embedding table is read whole by the head).
func weightBytes(dir string) (int64, error) {
	ck, err := checkpoint.OpenCheckpoint(dir)
	if err != nil {
		return 0, err
	}
	defer ck.Close()
	var n int64
	for _, name := range ck.Names() {
		t, _, _ := ck.Info(name)
		n += t.End - t.Begin
	}
	return n, nil
}

// BenchmarkPrefillReal prefills a 4,096-token prompt into the 4-bit checkpoint of
// BenchmarkDecodeReal with the plain generator, in chunks of PrefillStepSize (2048,
// mlx-lm's prefill_step_size) and, for comparison, in one forward ("whole"). It
// reports prompt tokens/s and the allocator's peak bytes beyond the weights (the
// prefill's scratch, which the chunks bound). Run it with -benchtime 1x;
// INGOT_PREFILL_TOKENS and INGOT_PREFILL_STEP change the prompt and the chunk.
func BenchmarkPrefillReal(b *testing.B) {
	dir := os.Getenv("INGOT_REAL_MODELS")
	if dir == "" {
		b.Skip("INGOT_REAL_MODELS is not set (scripts/bench-real.sh makes the models)")
	}
	n := 4096
	if v, err := strconv.Atoi(os.Getenv("INGOT_PREFILL_TOKENS")); err == nil && v > 0 {
		n = v
	}
	prompt := make([]int32, n)
	for i := range prompt {
		prompt[i] = int32(1 + (i*7919)%1000)
	}
	step := generate.PrefillStepSize
	if v, err := strconv.Atoi(os.Getenv("INGOT_PREFILL_STEP")); err == nil && v > 0 {
		step = v
	}
	for _, step := range []int{step, 0} {
		name := fmt.Sprintf("chunk%d", step)
		if step == 0 {
			name = "whole"
		}
		b.Run(name, func(b *testing.B) {
			g := graph.NewCPU(graph.Options{})
			m, err := models.Load(filepath.Join(dir, "q4"), g, nn.Options{})
			if err != nil {
				b.Fatal(err)
			}
			if err := g.Synchronize(); err != nil {
				b.Fatal(err)
			}
			base := g.Allocator().ActiveMemory()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				g.Allocator().ResetPeakMemory()
				p, err := generate.NewPlain(m, cache.Eager, prompt)
				if err != nil {
					b.Fatal(err)
				}
				p.PrefillStep = step
				if _, err := p.Next(); err != nil { // the prefill and the first token
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "prompt-tokens/s")
			b.ReportMetric(float64(g.Allocator().PeakMemory()-base)/1e6, "peak-scratch-MB")
		})
	}
}
