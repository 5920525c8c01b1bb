package generate_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/generate"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/internal/membw"
	"github.com/ingotml/ingot/kernels"
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

// BenchmarkPrefillReal prefills a 4,096-token prompt into each checkpoint of
// BenchmarkDecodeReal (4-bit, 8-bit, bfloat16) with the plain generator, in chunks of
// PrefillStepSize (2048, mlx-lm's prefill_step_size) and, at 4 bits, for comparison,
// in one forward ("whole"), and where the CPU has the format's instructions (int8 at
// 4 and 8 bits, bfloat16 pairs), with graph.Options.FastPrompts ("chunk2048-fast"). It reports prompt tokens/s, the allocator's peak bytes
// beyond the weights (the prefill's scratch, which the chunks bound), the matrix
// products' GFLOP/s (matrixFLOPs per token times tokens/s) and that as a share of
// the float32 FMA peak that membw.FMAProbe measures over both cores just before and
// just after (%fma, against their mean: the machine may be shared), and CPU time over
// wall time (cores). Run it with -benchtime 1x; INGOT_PREFILL_TOKENS and
// INGOT_PREFILL_STEP change the prompt and the chunk, INGOT_PREFILL_MODELS (e.g.
// "q4,bf16") the checkpoints.
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
	formats := []string{"q4", "q8", "bf16"}
	if v := os.Getenv("INGOT_PREFILL_MODELS"); v != "" {
		formats = strings.Split(v, ",")
	}
	for _, format := range formats {
		path := filepath.Join(dir, format)
		flops, err := matrixFLOPs(path)
		if err != nil {
			b.Fatal(err)
		}
		steps := []int{step}
		if format == "q4" {
			steps = append(steps, 0)
		}
		type variant struct {
			step int
			int8 bool
		}
		var variants []variant
		for _, st := range steps {
			variants = append(variants, variant{st, false})
		}
		if i8, bf := kernels.FastPromptPaths(); format == "bf16" && bf || format != "bf16" && i8 {
			variants = append(variants, variant{step, true})
		}
		for _, v := range variants {
			step := v.step
			name := fmt.Sprintf("%s/chunk%d", format, step)
			if step == 0 {
				name = format + "/whole"
			}
			if v.int8 {
				name += "-fast"
			}
			b.Run(name, func(b *testing.B) {
				g := graph.NewCPU(graph.Options{FastPrompts: v.int8})
				m, err := models.Load(path, g, nn.Options{})
				if err != nil {
					b.Fatal(err)
				}
				if err := g.Synchronize(); err != nil {
					b.Fatal(err)
				}
				base := g.Allocator().ActiveMemory()
				fma0 := membw.FMAProbe(0, 3, 100*time.Millisecond)
				cpu0 := cpuTime()
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
				cpu := cpuTime() - cpu0
				fma := (fma0 + membw.FMAProbe(0, 3, 100*time.Millisecond)) / 2
				tps := float64(n*b.N) / b.Elapsed().Seconds()
				b.ReportMetric(tps, "prompt-tokens/s")
				b.ReportMetric(float64(g.Allocator().PeakMemory()-base)/1e6, "peak-scratch-MB")
				b.ReportMetric(tps*flops/1e9, "GFLOP/s")
				if fma > 0 {
					b.ReportMetric(100*tps*flops/fma, "%fma")
					b.ReportMetric(fma/1e9, "fmaGFLOP/s")
				}
				b.ReportMetric(cpu.Seconds()/b.Elapsed().Seconds(), "cores")
			})
		}
	}
}

// matrixFLOPs is the floating-point operations of the matrix products of one prompt
// token through the checkpoint at dir: 2*N*K for every two-dimensional weight (K
// from the group count times the group size where the weight is quantized), but the
// embedding table, which a prefill chunk only indexes (it computes no logits).
func matrixFLOPs(dir string) (float64, error) {
	ck, err := checkpoint.OpenCheckpoint(dir)
	if err != nil {
		return 0, err
	}
	defer ck.Close()
	config, err := os.ReadFile(filepath.Join(dir, "config.json"))
	if err != nil {
		return 0, err
	}
	qc, err := checkpoint.ParseQuantConfig(config)
	if err != nil {
		return 0, err
	}
	var flops float64
	for _, name := range ck.Names() {
		module, ok := strings.CutSuffix(name, ".weight")
		if !ok || strings.Contains(module, "embed_tokens") || strings.Contains(module, "lm_head") {
			continue
		}
		t, _, _ := ck.Info(name)
		if len(t.Shape) != 2 {
			continue
		}
		nOut, k := t.Shape[0], t.Shape[1]
		if sc, _, ok := ck.Info(module + ".scales"); ok && qc != nil {
			spec, quantized := qc.For(module)
			if !quantized || len(sc.Shape) != 2 {
				return 0, fmt.Errorf("%s: scales %v without a quantization", module, sc.Shape)
			}
			k = sc.Shape[1] * spec.GroupSize
		}
		flops += 2 * float64(nOut) * float64(k)
	}
	return flops, nil
}
