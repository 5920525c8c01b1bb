package main

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ingotml/ingot/nn/checkpoint"
	"github.com/ingotml/ingot/nn/models"

	"github.com/stretchr/testify/require"

	"github.com/ingotml/ingot/internal/golden"
	"github.com/ingotml/ingot/kernels"
	"github.com/ingotml/ingot/nn/qwen35"
)

// goldenMoE returns a golden set whose model has routers to quantize at 8 bits and a
// leak to measure (sparse MLPs, at least two GDN layers, layer 0 a GDN layer), and its
// config.
func goldenMoE(t *testing.T) (string, *qwen35.Config) {
	t.Helper()
	root, err := golden.Root()
	require.NoError(t, err)
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	for _, e := range entries {
		dir := filepath.Join(root, e.Name())
		cfg, err := qwen35.LoadConfig(filepath.Join(dir, "config.json"))
		if err != nil {
			continue
		}
		if _, err := os.Stat(filepath.Join(dir, "model.safetensors")); err == nil && cfg.IsMoE() && cfg.NumGDN() >= 2 && !cfg.IsAttention(0) {
			return dir, cfg
		}
	}
	t.Skipf("no golden MoE set with two GDN layers under %s", root)
	return "", nil
}

// quantizedFixture quantizes a golden MoE model as mlx-community checkpoints are made
// (4 bits, group 32, routers 8 bits, bfloat16 scales) into shards under a temp dir.
func quantizedFixture(t *testing.T) (string, *qwen35.Config) {
	t.Helper()
	src, cfg := goldenMoE(t)
	hf, err := checkpoint.OpenCheckpoint(src)
	require.NoError(t, err)
	defer hf.Close()
	st, err := os.Stat(filepath.Join(src, "model.safetensors"))
	require.NoError(t, err)
	// As mlx-lm's convert (and cmd/quantize) does: mlx-lm's layout first, so the
	// expert stacks are quantized too.
	ts, err := qwen35.MLXLayout(hf)
	require.NoError(t, err)
	mlx := filepath.Join(t.TempDir(), "mlx")
	require.NoError(t, checkpoint.WriteCheckpoint(mlx, hf.Config, ts, checkpoint.WriteOptions{}))
	ck, err := checkpoint.OpenCheckpoint(mlx)
	require.NoError(t, err)
	defer ck.Close()
	dir := filepath.Join(t.TempDir(), "q4")
	require.NoError(t, checkpoint.QuantizeCheckpoint(ck, dir, checkpoint.QuantizeOptions{
		Default: checkpoint.QuantSpec{Bits: 4, GroupSize: 32}, Modules: checkpoint.RouterOverrides(ck.Names()),
		ScaleType: checkpoint.BF16, Write: checkpoint.WriteOptions{ShardBytes: st.Size() / 32}}))
	shards, err := filepath.Glob(filepath.Join(dir, "model-*-of-*.safetensors"))
	require.NoError(t, err)
	require.GreaterOrEqual(t, len(shards), 2, "a sharded fixture")
	return dir, cfg
}

// cmdRun runs the command without --json-out and returns its exit code, stdout and
// stderr.
func cmdRun(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// line returns the output's line starting with prefix.
func line(t *testing.T, out, prefix string) string {
	t.Helper()
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	require.Failf(t, "no line", "no %q line in\n%s", prefix, out)
	return ""
}

var buffersRe = regexp.MustCompile(`; ([\d,]+) buffers after load`)

// buffersAfterLoad reads the [model] line's buffer count.
func buffersAfterLoad(t *testing.T, out string) int {
	t.Helper()
	m := buffersRe.FindStringSubmatch(line(t, out, "[model] "))
	require.NotNil(t, m, out)
	n, err := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
	require.NoError(t, err)
	return n
}

// predictOnlyRun runs --predict-only, requires exit 0 within a second and returns
// the output.
func predictOnlyRun(t *testing.T, args ...string) string {
	t.Helper()
	start := time.Now()
	code, out, errs := cmdRun(append(args, "--predict-only")...)
	require.Equal(t, exitFlat, code, "%v\n%s%s", args, out, errs)
	require.Less(t, time.Since(start), time.Second, "--predict-only reads headers only")
	require.NotContains(t, out, "tok ", "nothing is decoded")
	return out
}

// TestQuantizedCheckpointRun: a quantized, sharded checkpoint made from a golden model
// leaks GDN layers - 1 objects per token on the lazy path, crashes at the predicted
// token under a scaled-down limit, stays flat on the eager path with the same tokens,
// and --predict-only predicts what the full run does.
func TestQuantizedCheckpointRun(t *testing.T) {
	dir, cfg := quantizedFixture(t)
	gdn, attn := cfg.NumGDN(), cfg.NumLayers-cfg.NumGDN()
	args := []string{"--model", dir, "--tokens", "200", "--report-every", "25"}
	code, out, j := decode(t, args...)
	require.Equal(t, exitLeak, code, out)
	require.Equal(t, float64(gdn-1), j["slope_per_token"], out)
	weights := "weights=4-bit g32 affine"
	if cfg.HiddenSize%64 == 0 {
		// The routers (input width: the hidden size) are quantized at group 64 only
		// when it divides the width; otherwise they rightly stay in float.
		weights += ", routers 8-bit g64"
	} else {
		require.NotContains(t, out, "routers", out)
	}
	require.Contains(t, out, fmt.Sprintf("[model] %s from %s: layers=%d (ssm=%d attn=%d; mlp sparse=%d dense=%d) %s",
		cfg.ModelType, dir, cfg.NumLayers, gdn, attn, cfg.NumSparse(), cfg.NumLayers-cfg.NumSparse(), weights), out)
	require.Contains(t, out, fmt.Sprintf("[predict] leak ~%d objects/token", gdn-1))
	base := int(j["baseline_live"].(float64))

	code, out2, je := decode(t, append(args, "--cache", "eager")...)
	require.Equal(t, exitFlat, code, out2)
	require.LessOrEqual(t, math.Abs(je["slope_per_token"].(float64)), 0.01)
	require.Equal(t, tokens(j), tokens(je), "the fix changes no token")

	// The prediction from the headers alone: the same buffers after load and the same
	// [predict] line as the run's (whose baseline is measured).
	pred := predictOnlyRun(t, "--model", dir)
	require.Equal(t, buffersAfterLoad(t, out), buffersAfterLoad(t, pred), "%s\n%s", out, pred)
	require.Equal(t, line(t, out, "[predict] "), line(t, pred, "[predict] "))
	require.Contains(t, pred, fmt.Sprintf("= %s live buffers once decoding begins", comma(base)))

	// A limit a few hundred objects above the baseline: the crash comes at
	// (limit - baseline) / (GDN - 1).
	limit := base + 300
	lim := strconv.Itoa(limit)
	code, out, j = decode(t, "--model", dir, "--limit", lim, "--tokens", "5000", "--report-every", "10")
	require.Equal(t, exitCrash, code, out)
	require.Contains(t, out, "[verdict] CRASH REPRODUCED: [metal::malloc] Resource limit ("+lim+") exceeded.")
	slope, want := gdn-1, (limit-base)/(gdn-1)
	got := int(j["crash_token"].(float64))
	// Live buffers grow by exactly the slope per token up to the crash...
	ss := j["samples"].([]any)
	for _, s := range ss[:len(ss)-1] {
		tok, live := s.([]any)[0].(float64), s.([]any)[1].(map[string]any)["live"].(float64)
		require.Equal(t, base+slope*int(tok), int(live), "token %v\n%s", tok, out)
	}
	// ...and the step after token got is the first whose own arrays (at most
	// stepBuffers beyond what it keeps) no longer fit under the limit: the crash comes
	// at the predicted token, or up to stepBuffers/slope tokens before it.
	const stepBuffers = 16
	headroom := limit - (base + slope*got)
	require.Greater(t, headroom, 0, out)
	require.LessOrEqual(t, headroom, stepBuffers, out)
	require.LessOrEqual(t, got, want, out)
	require.GreaterOrEqual(t, got, want-stepBuffers/slope, out)
	require.Contains(t, out, fmt.Sprintf("[predict] leak ~%d objects/token -> resource-limit crash near token ~%s (if unpatched)", gdn-1, comma(want)))
	pred = predictOnlyRun(t, "--model", dir, "--limit", lim)
	require.Equal(t, line(t, out, "[predict] "), line(t, pred, "[predict] "))
}

// TestMLXCheckpointRun: the checkpoint mlx-lm wrote (quantized, indexed, nested
// text_config) runs through --model; its slope is its GDN layers - 1 and
// --predict-only predicts the run's crash token.
func TestMLXCheckpointRun(t *testing.T) {
	dir := filepath.Join(golden.MLXRoot(), "mlx_q4g32_12l")
	raw, err := os.ReadFile(filepath.Join(dir, "config.json"))
	require.NoError(t, err)
	cfg, err := qwen35.ParseModelArgs(raw)
	require.NoError(t, err)
	code, out, j := decode(t, "--model", dir, "--tokens", "48", "--report-every", "6")
	require.Equal(t, exitLeak, code, out)
	require.Equal(t, float64(cfg.NumGDN()-1), j["slope_per_token"], out)
	require.Contains(t, out, "weights=4-bit g32 affine, routers 8-bit g64; ")
	pred := predictOnlyRun(t, "--model", dir)
	require.Equal(t, buffersAfterLoad(t, out), buffersAfterLoad(t, pred))
	require.Equal(t, line(t, out, "[predict] "), line(t, pred, "[predict] "))
}

// TestPredictOnlyMatchesRun: for float checkpoints (fused and per-expert layouts, a
// dense model) and random models of several layer mixes (attention or GDN first), on
// the batch and the plain path, --predict-only prints the full run's buffers after
// load, [predict] line and measured slope, and its [baseline] sum is the run's
// measured baseline; an attention-only model predicts no leak.
func TestPredictOnlyMatchesRun(t *testing.T) {
	root, err := golden.Root()
	require.NoError(t, err)
	entries, err := os.ReadDir(root)
	require.NoError(t, err)
	var cases [][]string
	for _, e := range entries {
		for _, d := range []string{filepath.Join(root, e.Name()), filepath.Join(root, e.Name(), "hf_save_pretrained")} {
			if _, err := os.Stat(filepath.Join(d, "config.json")); err == nil {
				cases = append(cases, []string{"--model", d})
			}
		}
	}
	require.NotEmpty(t, cases)
	bf16 := bfloat16Copy(t, cases[0][1])
	cases = append(cases, []string{"--model", bf16}, []string{"--layers", "12", "--interval", "4"}, []string{"--model-type", "qwen3_next", "--layers", "6"},
		[]string{"--config", "testdata/qwen3_5_moe_tiny/config.json"}, []string{"--attention-only", "--layers", "3"})
	for _, mix := range []string{"AGGA", "AGAA", "GAAA", "AAAA", "GGGA"} {
		cases = append(cases, []string{"--config", layerMixConfig(t, mix)})
	}
	for _, c := range cases[:] {
		cases = append(cases, append([]string{"--mode", "plain"}, c...))
	}
	for _, args := range cases {
		code, out, j := decode(t, append(args, "--tokens", "16", "--report-every", "2")...)
		require.Contains(t, []int{exitLeak, exitFlat}, code, "%v\n%s", args, out)
		pred := predictOnlyRun(t, args...)
		require.Equal(t, line(t, out, "[predict] "), line(t, pred, "[predict] "), args)
		want := 0.0
		if n, err := fmt.Sscanf(line(t, pred, "[predict] "), "[predict] leak ~%v", &want); n != 1 {
			require.Error(t, err)
		}
		require.InDelta(t, want, j["slope_per_token"].(float64), 1e-9, "%v\n%s\n%s", args, pred, out)
		require.Contains(t, pred, fmt.Sprintf("= %s live buffers once decoding begins", comma(int(j["baseline_live"].(float64)))), "%v\n%s\n%s", args, pred, out)
		if args[0] == "--model" {
			require.Equal(t, buffersAfterLoad(t, out), buffersAfterLoad(t, pred), args)
		}
		if args[0] == "--model" && args[1] == bf16 {
			require.Contains(t, pred, " weights=float (bfloat16); ")
		}
	}
	require.Contains(t, predictOnlyRun(t, "--attention-only", "--layers", "3"), "[predict] 0 GDN layers -> no leak expected")
}

// layerMixConfig writes the tiny MoE config with its first len(mix) layers of the
// kinds mix spells (A attention, G GDN) and returns its path.
func layerMixConfig(t *testing.T, mix string) string {
	t.Helper()
	raw, err := os.ReadFile("testdata/qwen3_5_moe_tiny/config.json")
	require.NoError(t, err)
	var cfg map[string]any
	require.NoError(t, json.Unmarshal(raw, &cfg))
	text := cfg["text_config"].(map[string]any)
	var kinds []any
	for _, k := range mix {
		kinds = append(kinds, map[rune]string{'A': "full_attention", 'G': "linear_attention"}[k])
	}
	text["layer_types"], text["num_hidden_layers"] = kinds, len(mix)
	delete(text, "full_attention_interval")
	raw, err = json.Marshal(cfg)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "config.json")
	require.NoError(t, os.WriteFile(path, raw, 0o644))
	return path
}

// bfloat16Copy writes src's float32 tensors as bfloat16 (a published checkpoint's
// dtype: the activations are then bfloat16 too).
func bfloat16Copy(t *testing.T, src string) string {
	t.Helper()
	ck, err := checkpoint.OpenCheckpoint(src)
	require.NoError(t, err)
	defer ck.Close()
	var ts []checkpoint.WriteTensor
	for _, name := range ck.Names() {
		b, info, err := ck.Bytes(name)
		require.NoError(t, err)
		if info.DType == checkpoint.F32 {
			v, _, err := ck.Float32(name)
			require.NoError(t, err)
			b = make([]byte, 2*len(v))
			for i, x := range v {
				binary.LittleEndian.PutUint16(b[2*i:], kernels.F32ToBF16(x))
			}
			info.DType = checkpoint.BF16
		}
		ts = append(ts, checkpoint.WriteTensor{Name: name, DType: info.DType, Shape: info.Shape, Data: b})
	}
	dir := filepath.Join(t.TempDir(), "bf16")
	require.NoError(t, checkpoint.WriteCheckpoint(dir, ck.Config, ts, checkpoint.WriteOptions{}))
	return dir
}

// writeSparseCheckpoint writes a checkpoint whose header describes tensors of the
// given shapes (float32) without their data: the file is extended to its full size
// sparsely, so it takes no disk space.
// storedShapes lists every tensor a checkpoint of config must hold, from the model's
// description, in mlx-lm's layout (switch_mlp expert banks, a [C, K, 1] conv).
func storedShapes(t *testing.T, config []byte) map[string][]int {
	t.Helper()
	cfg, err := models.ParseConfig(config)
	require.NoError(t, err)
	d, err := cfg.Describe()
	require.NoError(t, err)
	out := map[string][]int{}
	for _, p := range d.Params {
		name, shape := p.Name, p.Shape
		if i := strings.LastIndex(name, ".experts."); i >= 0 {
			name = name[:i] + ".switch_mlp." + name[i+len(".experts."):] + ".weight"
		}
		if strings.HasSuffix(name, "conv1d.weight") {
			shape = []int{shape[0], shape[1], 1}
		}
		out[name] = shape
	}
	return out
}

func writeSparseCheckpoint(t *testing.T, dir string, config []byte, shapes map[string][]int) {
	t.Helper()
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "config.json"), config, 0o644))
	names := make([]string, 0, len(shapes))
	for n := range shapes {
		names = append(names, n)
	}
	slices.Sort(names)
	header := map[string]any{}
	var off int64
	for _, n := range names {
		size := int64(4)
		for _, d := range shapes[n] {
			size *= int64(d)
		}
		header[n] = map[string]any{"dtype": "F32", "shape": shapes[n], "data_offsets": []int64{off, off + size}}
		off += size
	}
	h, err := json.Marshal(header)
	require.NoError(t, err)
	for len(h)%8 != 0 {
		h = append(h, ' ')
	}
	f, err := os.Create(filepath.Join(dir, "model.safetensors"))
	require.NoError(t, err)
	defer f.Close()
	require.NoError(t, binary.Write(f, binary.LittleEndian, uint64(len(h))))
	_, err = f.Write(h)
	require.NoError(t, err)
	require.NoError(t, f.Truncate(8+int64(len(h))+off))
}

// copyDir copies the regular files of src into a new temp dir.
func copyDir(t *testing.T, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	require.NoError(t, os.MkdirAll(dst, 0o755))
	entries, err := os.ReadDir(src)
	require.NoError(t, err)
	for _, e := range entries {
		if e.Type().IsRegular() {
			b, err := os.ReadFile(filepath.Join(src, e.Name()))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dst, e.Name()), b, 0o644))
		}
	}
	return dst
}

// refused runs the command, requires exit 64 with exactly want on stderr, and returns
// stdout.
func refused(t *testing.T, want string, args ...string) string {
	t.Helper()
	code, out, errs := cmdRun(args...)
	require.Equal(t, exitUsage, code, "%v\n%s%s", args, out, errs)
	require.Equal(t, "decode: usage: "+want+"\n", errs, "%v", args)
	require.NotContains(t, out, "tok ", "%v: refused only after decoding", args)
	return out
}

// TestCheckpointErrors: a checkpoint that cannot be used is refused (exit 64) before
// decoding, with a message naming the file at fault.
func TestCheckpointErrors(t *testing.T) {
	src, cfg := goldenMoE(t)
	tmp := t.TempDir()
	missing := filepath.Join(tmp, "missing")
	file := filepath.Join(tmp, "file")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	empty := filepath.Join(tmp, "empty")
	require.NoError(t, os.Mkdir(empty, 0o755))
	noWeights := filepath.Join(tmp, "noweights")
	require.NoError(t, os.Mkdir(noWeights, 0o755))
	raw, err := os.ReadFile(filepath.Join(src, "config.json"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(noWeights, "config.json"), raw, 0o644))
	llama := copyDir(t, src)
	require.NoError(t, os.WriteFile(filepath.Join(llama, "config.json"), []byte(`{"model_type": "llama"}`), 0o644))

	// A shard the index names is gone.
	sharded, _ := quantizedFixture(t)
	shards, err := filepath.Glob(filepath.Join(sharded, "model-*-of-*.safetensors"))
	require.NoError(t, err)
	gone := shards[len(shards)-1]
	require.NoError(t, os.Remove(gone))
	idx, err := os.ReadFile(filepath.Join(sharded, checkpoint.IndexFile))
	require.NoError(t, err)
	var index struct {
		WeightMap map[string]string `json:"weight_map"`
	}
	require.NoError(t, json.Unmarshal(idx, &index))
	first := ""
	for name, f := range index.WeightMap {
		if f == filepath.Base(gone) && (first == "" || name < first) {
			first = name
		}
	}

	// A tensor whose header is sound but whose shape the config rules out.
	ck, err := checkpoint.OpenCheckpoint(src)
	require.NoError(t, err)
	var ts []checkpoint.WriteTensor
	for _, name := range ck.Names() {
		b, info, err := ck.Bytes(name)
		require.NoError(t, err)
		if name == "model.norm.weight" {
			info.Shape, b = []int{cfg.HiddenSize / 2}, b[:len(b)/2]
		}
		ts = append(ts, checkpoint.WriteTensor{Name: name, DType: info.DType, Shape: info.Shape, Data: b})
	}
	misshapen := filepath.Join(tmp, "misshapen")
	require.NoError(t, checkpoint.WriteCheckpoint(misshapen, raw, ts, checkpoint.WriteOptions{}))
	ck.Close() // after the write: the tensors' bytes alias the mapping

	// A truncated weight file.
	truncated := copyDir(t, src)
	st := filepath.Join(truncated, "model.safetensors")
	require.NoError(t, os.Truncate(st, 4))

	for _, c := range []struct {
		want string
		args []string
	}{
		{"--model " + missing + ": no such file or directory", []string{"--model", missing}},
		{"--model " + file + ": not a directory", []string{"--model", file}},
		{fmt.Sprintf("--model: checkpoint %[1]s: cannot read the model config: open %[1]s: no such file or directory", filepath.Join(empty, "config.json")), []string{"--model", empty}},
		{"--model: checkpoint " + noWeights + ": no model.safetensors.index.json and no model*.safetensors", []string{"--model", noWeights}},
		{"--model: " + filepath.Join(llama, "config.json") + `: unknown model type "llama" (known: ` + strings.Join(models.Types(), ", ") + ")", []string{"--model", llama}},
		{"--model: checkpoint " + gone + ": tensor " + first + ": shard named by model.safetensors.index.json is missing: file does not exist", []string{"--model", sharded}},
		{fmt.Sprintf("--model: qwen35: %s: tensor model.norm.weight: shape [%d], want [%d]", filepath.Join(misshapen, "model.safetensors"), cfg.HiddenSize/2, cfg.HiddenSize), []string{"--model", misshapen}},
		{"--model: safetensors " + st + ": file too short for the 8-byte header length (4 bytes)", []string{"--model", truncated}},
	} {
		refused(t, c.want, append(c.args, "--tokens", "8")...)
		if !strings.Contains(c.want, "qwen35:") { // the headers alone show every other fault
			refused(t, c.want, append(c.args, "--predict-only")...)
		}
	}
}

// TestModelFlagRefusals: the flags that shape the random model do not apply with
// --model, and those a prediction would ignore do not apply with --predict-only.
func TestModelFlagRefusals(t *testing.T) {
	src, _ := goldenMoE(t)
	for _, f := range [][]string{{"--model-type", "qwen3_5"}, {"--config", "x.json"}, {"--layers", "4"}, {"--interval", "4"},
		{"--experts", "4"}, {"--hidden", "32"}, {"--seed", "1"}, {"--attention-only"}} {
		refused(t, f[0]+" does not apply with --model (the checkpoint decides the model)", append([]string{"--model", src}, f...)...)
	}
	refused(t, "--tokens does not apply with --predict-only (nothing is decoded)", "--model", src, "--predict-only", "--tokens", "100")
	refused(t, "--census, --json-out do not apply with --predict-only (nothing is decoded)", "--predict-only", "--census", "--json-out", "x.json")
	refused(t, "--predict-only predicts one completion (--mode batch or plain), not --mode server", "--model", src, "--predict-only", "--mode", "server")
	// A limit one below the predicted baseline: the prediction refuses it, and so does
	// the run, at its first token.
	m := regexp.MustCompile(`= ([\d,]+) live buffers once decoding begins`).FindStringSubmatch(predictOnlyRun(t, "--model", src))
	require.NotNil(t, m)
	base, err := strconv.Atoi(strings.ReplaceAll(m[1], ",", ""))
	require.NoError(t, err)
	lim := strconv.Itoa(base - 1)
	refused(t, fmt.Sprintf("--limit %s is below this model's baseline: it needs ~%s buffer objects before its first token (raise the limit)", lim, comma(base)),
		"--model", src, "--predict-only", "--limit", lim)
	refused(t, "--limit "+lim+" is below this model's baseline: the model and its first decoded token need more buffer objects than that (raise the limit)",
		"--model", src, "--limit", lim, "--tokens", "8")
}

// TestCheckpointMustFitMemory: the memory estimate uses the tensors' sizes from the
// headers, so a checkpoint larger than the machine is refused before anything is read
// or allocated; --predict-only still predicts it and says it does not fit.
func TestCheckpointMustFitMemory(t *testing.T) {
	src, _ := goldenMoE(t)
	raw, err := os.ReadFile(filepath.Join(src, "config.json"))
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(raw, &m))
	// 512 GiB of float32 embedding, twice (untied): more than any machine this runs on.
	const vocab, h = 1 << 24, 1 << 13
	m["vocab_size"], m["hidden_size"], m["tie_word_embeddings"] = vocab, h, false
	big, err := json.Marshal(m)
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "huge")
	shapes := storedShapes(t, big)
	writeSparseCheckpoint(t, dir, big, shapes)
	weights := int64(0)
	for _, sh := range shapes {
		n := int64(4)
		for _, d := range sh {
			n *= int64(d)
		}
		weights += n
	}
	code, out, errs := cmdRun("--model", dir, "--tokens", "8")
	require.Equal(t, exitUsage, code, out+errs)
	require.Regexp(t, `^decode: usage: the model needs ~\d+\.\d\d GB \(weights `+regexp.QuoteMeta(gb(weights))+`, KV cache .*\), which exceeds this machine's memory limit of \d+\.\d\d GB; use a smaller checkpoint or --tokens\n$`, errs)
	pred := predictOnlyRun(t, "--model", dir)
	require.Regexp(t, `\[memory\] a run needs ~\d+\.\d\d GB \(weights `+regexp.QuoteMeta(gb(weights))+`\); this machine's memory limit is \d+\.\d+ [GM]B: it does NOT fit`, pred)
}

// TestCheckpointRunFlags: --compare (lazy and eager: a checkpoint has no
// attention-only twin), --plot, --census and --mode work on a checkpoint as on the
// random model.
func TestCheckpointRunFlags(t *testing.T) {
	src, cfg := goldenMoE(t)
	svg := filepath.Join(t.TempDir(), "cmp.svg")
	code, out, j := decode(t, "--model", src, "--compare", "--tokens", "100", "--report-every", "10", "--plot", svg)
	require.Equal(t, exitLeak, code, out)
	require.Contains(t, out, "[note] --compare with --model: lazy and eager only (a checkpoint has no attention-only control)\n")
	require.Contains(t, out, "[compare] lazy and eager emitted the same 100 tokens\n")
	require.Len(t, j["runs"].([]any), 1)
	b, err := os.ReadFile(svg)
	require.NoError(t, err)
	require.Equal(t, 2, strings.Count(string(b), "<polyline"), "one line per run")

	code, out, j = decode(t, "--model", src, "--census", "--tokens", "100", "--report-every", "10")
	require.Equal(t, exitLeak, code, out)
	growing := j["census"].(map[string]any)["growing_sites"].([]any)
	require.Len(t, growing, 1, out)
	require.Equal(t, lazySubSite(t), growing[0].(map[string]any)["site"])
	require.Equal(t, float64(cfg.NumGDN()-1), growing[0].(map[string]any)["slope_per_token"])

	code, out, _ = decode(t, "--model", src, "--mode", "plain", "--tokens", "100", "--report-every", "10")
	require.Equal(t, exitFlat, code, out)
	require.Contains(t, out, "[predict] plain path (generate_step): caches never armed -> no leak expected")
	pred := predictOnlyRun(t, "--model", src, "--mode", "plain")
	require.Equal(t, line(t, out, "[predict] "), line(t, pred, "[predict] "))

	code, out, _ = decode(t, "--model", src, "--mode", "server", "--requests", "8", "--request-tokens", "20", "--concurrency", "2")
	require.Equal(t, exitLeak, code, out)
	require.Contains(t, out, "[verdict] LEAKING across churn")
	// In server mode --seed picks the requests' prompts, which a checkpoint does not decide.
	code, out2, _ := decode(t, "--model", src, "--mode", "server", "--requests", "8", "--request-tokens", "20", "--concurrency", "2", "--seed", "7")
	require.Equal(t, exitLeak, code, out2)
	require.Contains(t, out2, "[verdict] LEAKING across churn")
}

// TestFastPromptsFlag: --fast-prompts on a quantized checkpoint changes no count (the
// same buffers live at every sample, the same flat verdict), and says when this CPU
// lacks a format's instructions.
func TestFastPromptsFlag(t *testing.T) {
	dir, _ := quantizedFixture(t)
	args := []string{"--model", dir, "--cache", "eager", "--tokens", "100", "--report-every", "10"}
	code, out, j := decode(t, args...)
	require.Equal(t, exitFlat, code, out)
	code, fout, jf := decode(t, append(args, "--fast-prompts")...)
	require.Equal(t, exitFlat, code, fout)
	require.Equal(t, j["baseline_live"], jf["baseline_live"], fout)
	counts := func(j map[string]any) (c []any) {
		for _, s := range j["samples"].([]any) {
			m := s.([]any)[1].(map[string]any)
			c = append(c, s.([]any)[0], m["live"], m["count"], m["cache_count"], m["active_mb"], m["cache_mb"])
		}
		return c
	}
	require.Equal(t, counts(j), counts(jf), "every sample's counts and bytes")
	i8, bf := kernels.FastPromptPaths()
	note := "[note] --fast-prompts: this CPU has AVX512-VNNI"
	if i8 && bf {
		require.NotContains(t, fout, note)
	} else {
		require.Contains(t, fout, fmt.Sprintf("%s %v, AVX512_BF16 %v", note, i8, bf))
	}
}
