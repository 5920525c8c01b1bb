package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/ingotml/ingot/nn/checkpoint"

	"github.com/ingotml/ingot/alloc"
	"github.com/ingotml/ingot/cache"
	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/models"
	"github.com/ingotml/ingot/nn/qwen35"
)

// runBuffersPerLayer is what a batch run holds per layer besides the weights once one
// request is decoding (the layer's cache state and batch metadata), measured on the
// random models of every type and layer mix; TestPredictOnlyMatchesRun pins it.
const runBuffersPerLayer = 5

// constantBuffers is how many small constant arrays the model builds next to its
// weights (a zero scalar, and the q/k scales when it has GDN layers).
func constantBuffers(cfg *qwen35.Config) int {
	if cfg.NumGDN() > 0 {
		return 3
	}
	return 1
}

// checkpointInfo is what config.json and the safetensors headers say about a
// checkpoint; no weight data is read.
type checkpointInfo struct {
	dir       string
	modelType string // config.json's model_type (text_config's when nested)
	cfg       *qwen35.Config
	files     int   // weight files
	bytes     int64 // bytes of the tensors the model loads
	largest   int64 // the largest of them
	buffers   int   // device buffers the loader makes for the weights
	weights   string
	// ck is the open checkpoint whose headers this describes: the loader builds from it
	// (models.LoadCheckpoint), so a run parses the headers once. The caller closes it.
	ck *checkpoint.Checkpoint
}

// inspectCheckpoint reads dir's config.json and safetensors headers. Every error is a
// usage error naming the file at fault.
func inspectCheckpoint(dir string) (*checkpointInfo, error) {
	bad := func(err error) error { return fmt.Errorf("%w: --model %s: %w", errUsage, dir, err) }
	st, err := os.Stat(dir)
	if err != nil {
		return nil, bad(unwrapPath(err))
	}
	if !st.IsDir() {
		return nil, bad(errors.New("not a directory"))
	}
	ck, err := checkpoint.OpenCheckpoint(dir)
	if err != nil {
		return nil, fmt.Errorf("%w: --model: %w", errUsage, err)
	}
	keep := false
	defer func() {
		if !keep {
			ck.Close()
		}
	}()
	cfgPath := filepath.Join(dir, "config.json")
	typ, err := models.ModelType(ck.Config)
	if err != nil {
		return nil, fmt.Errorf("%w: --model: %s: %w", errUsage, cfgPath, err)
	}
	if !slices.Contains(models.Types(), typ) {
		return nil, fmt.Errorf("%w: --model: %s: %w %q (known: %s)", errUsage, cfgPath, models.ErrUnknownModelType, typ, strings.Join(models.Types(), ", "))
	}
	// The loader reads a file mlx-lm wrote with mlx-lm's defaults (nn/qwen35.Load).
	parse := qwen35.ParseHFConfig
	if ck.Format() == "mlx" {
		parse = qwen35.ParseModelArgs
	}
	cfg, err := parse(ck.Config)
	if err != nil {
		return nil, fmt.Errorf("%w: --model: %s: %w", errUsage, cfgPath, err)
	}
	info := &checkpointInfo{dir: dir, modelType: typ, cfg: cfg, files: len(ck.Files())}
	forEachParam(cfg, func(...int) { info.buffers++ })
	if cfg.AttentionBias {
		info.buffers += 4 * (cfg.NumLayers - cfg.NumGDN()) // q, k, v, o biases
	}
	used := usedTensors(ck, cfg)
	for _, name := range used {
		t, _, _ := ck.Info(name)
		n := t.End - t.Begin
		info.bytes += n
		info.largest = max(info.largest, n)
		if module, ok := strings.CutSuffix(name, ".scales"); ok && ck.Quantized(module) {
			info.buffers += 2 // a quantized module is three buffers: weight, scales, biases
		}
	}
	info.weights = describeWeights(ck, used)
	info.ck, keep = ck, true
	return info, nil
}

// usedTensors returns the names of the tensors the text model loads: everything under
// the body prefix's embed_tokens, layers and norm, and the untied head. A multimodal
// checkpoint's vision tower and an MTP head are not loaded.
func usedTensors(ck *checkpoint.Checkpoint, cfg *qwen35.Config) []string {
	body := "model."
	for _, p := range []string{"model.language_model.", "language_model.model.", "model."} {
		if _, _, ok := ck.Info(p + "embed_tokens.weight"); ok {
			body = p
			break
		}
	}
	var out []string
	for _, name := range ck.Names() {
		rest, ok := strings.CutPrefix(name, body)
		isBody := ok && (strings.HasPrefix(rest, "embed_tokens.") || strings.HasPrefix(rest, "layers.") || strings.HasPrefix(rest, "norm."))
		isHead := !cfg.TieWordEmbeddings && (strings.HasPrefix(name, "lm_head.") || strings.HasPrefix(name, "language_model.lm_head."))
		if isBody || isHead {
			out = append(out, name)
		}
	}
	return out
}

// describeWeights names how the loaded tensors are stored: "float (bfloat16)", or the
// quantization, e.g. "4-bit g32 affine, routers 8-bit g64, 4 modules float".
func describeWeights(ck *checkpoint.Checkpoint, used []string) string {
	var quantized []string
	floats := map[string]int{}
	floatModules := 0
	for _, name := range used {
		if module, ok := strings.CutSuffix(name, ".scales"); ok && ck.Quantized(module) {
			quantized = append(quantized, module)
			continue
		}
		module, isWeight := strings.CutSuffix(name, ".weight")
		if isWeight && ck.Quantized(module) {
			continue // the packed codes
		}
		t, _, _ := ck.Info(name)
		if d := dtypeName(t.DType); d != "" {
			floats[d]++
			// A matrix that is neither a norm nor the convolution: a module left in float.
			if isWeight && len(t.Shape) >= 2 && !strings.Contains(name, "norm") && !strings.Contains(name, "conv1d") {
				floatModules++
			}
		}
	}
	if len(quantized) == 0 {
		kinds := make([]string, 0, len(floats))
		for d := range floats {
			kinds = append(kinds, d)
		}
		// Most common first: the checkpoint's dtype, then any odd ones out.
		sort.Slice(kinds, func(i, j int) bool {
			if floats[kinds[i]] != floats[kinds[j]] {
				return floats[kinds[i]] > floats[kinds[j]]
			}
			return kinds[i] < kinds[j]
		})
		return "float (" + strings.Join(kinds, ", ") + ")"
	}
	def := ck.Quant.Default
	s := fmt.Sprintf("%d-bit g%d affine", def.Bits, def.GroupSize)
	routers, others := map[checkpoint.QuantSpec]int{}, map[checkpoint.QuantSpec]int{}
	for _, m := range quantized {
		spec, _ := ck.Quant.For(m)
		switch {
		case spec == def:
		case strings.HasSuffix(m, "mlp.gate") || strings.HasSuffix(m, "mlp.shared_expert_gate"):
			routers[spec]++
		default:
			others[spec]++
		}
	}
	spec := func(q checkpoint.QuantSpec) string {
		if q.GroupSize == def.GroupSize {
			return fmt.Sprintf("%d-bit", q.Bits)
		}
		return fmt.Sprintf("%d-bit g%d", q.Bits, q.GroupSize)
	}
	for _, q := range sortedSpecs(routers) {
		s += ", routers " + spec(q)
	}
	for _, q := range sortedSpecs(others) {
		s += fmt.Sprintf(", %d modules %s", others[q], spec(q))
	}
	if floatModules > 0 {
		s += fmt.Sprintf(", %d modules float", floatModules)
	}
	return s
}

func sortedSpecs(m map[checkpoint.QuantSpec]int) []checkpoint.QuantSpec {
	out := make([]checkpoint.QuantSpec, 0, len(m))
	for q := range m {
		out = append(out, q)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Bits != out[j].Bits {
			return out[i].Bits < out[j].Bits
		}
		return out[i].GroupSize < out[j].GroupSize
	})
	return out
}

// dtypeName is a float dtype's name as MLX prints it ("" for other dtypes).
func dtypeName(d checkpoint.DType) string {
	return map[checkpoint.DType]string{checkpoint.F32: "float32", checkpoint.F16: "float16", checkpoint.BF16: "bfloat16"}[d]
}

// modelSummary is the [model] line's description of a checkpoint, up to the buffer
// count: type and directory, layer counts, how the weights are stored.
func (c *checkpointInfo) modelSummary(buffers int) string {
	cfg := c.cfg
	sparse := cfg.NumSparse()
	files := "1 file"
	if c.files != 1 {
		files = fmt.Sprintf("%d files", c.files)
	}
	return fmt.Sprintf("%s from %s: layers=%d (ssm=%d attn=%d; mlp sparse=%d dense=%d) weights=%s; %s buffers after load (%s in %s)",
		c.modelType, c.dir, cfg.NumLayers, cfg.NumGDN(), cfg.NumLayers-cfg.NumGDN(), sparse, cfg.NumLayers-sparse,
		c.weights, comma(buffers), mb(c.bytes), files)
}

func mb(n int64) string { return fmt.Sprintf("%.1f MB", float64(n)/1e6) }

// size is n bytes in GB, or in MB below a gigabyte.
func size(n int64) string {
	if n < 1e9 {
		return mb(n)
	}
	return gb(n)
}

// estimate is the run's memory estimate with the checkpoint's real tensor sizes.
func (c *checkpointInfo) estimate(o *options, spec runSpec, limit int) memEstimate {
	return estimateRun(o, spec, c.cfg, limit, memEstimate{weights: c.bytes, arrays: c.buffers, largest: c.largest})
}

// loadCheckpoint checks that --model's checkpoint fits in memory and loads it onto a
// new graph. It returns the graph, the model, what the headers said, and the weight
// buffers the allocator holds after the load (the weights and the model's constants).
func loadCheckpoint(o *options, spec runSpec, dev graph.Device, lim limit) (*graph.Graph, nn.Model, *checkpointInfo, int, error) {
	info, err := inspectCheckpoint(o.modelDir)
	if err != nil {
		return nil, nil, nil, 0, err
	}
	defer info.ck.Close() // the weights are copied to device buffers by the load
	est := info.estimate(o, spec, lim.n)
	if err := checkFitsHint(est, alloc.New(dev.Provider(), alloc.Config{}).Stats().MemoryLimit, "use a smaller checkpoint or --tokens"); err != nil {
		return nil, nil, nil, 0, err
	}
	g := graph.New(dev, graphOptions(lim))
	m, err := models.LoadCheckpoint(info.ck, g, models.Options{OpsGatedDelta: o.ops})
	if err == nil {
		err = g.Synchronize() // the weights are uploaded: a limit below them fails here
	}
	if isLimit(err) {
		return nil, nil, nil, 0, lim.belowBaseline(fmt.Sprintf("its %s weight buffers alone need more buffer objects than that", comma(info.buffers)))
	}
	if err != nil {
		// The headers were sound but a tensor was not (shape, dtype, layout): bad input.
		return nil, nil, nil, 0, fmt.Errorf("%w: --model: %w", errUsage, err)
	}
	return g, m, info, g.Allocator().LiveBufferCount(), nil
}

// predictOnly prints the prediction of --model's checkpoint (or of the random model)
// from config.json and the safetensors headers alone: the weight buffers the loader
// would make, the baseline a batch run would measure, the slope and the crash token.
func predictOnly(o *options, out io.Writer) error {
	dev, name, err := openDevice(o.device)
	if err != nil {
		return err
	}
	lim, err := resolveLimit(o, dev)
	if err != nil {
		return err
	}
	spec := runSpec{policy: o.cache, attentionOnly: o.attentionOnly}
	var cfg *qwen35.Config
	var est memEstimate
	var weights int
	if o.modelDir != "" {
		info, err := inspectCheckpoint(o.modelDir)
		if err != nil {
			return err
		}
		info.ck.Close() // headers only: no tensor is read
		cfg, est = info.cfg, info.estimate(o, spec, lim.n)
		weights = info.buffers + constantBuffers(cfg)
		fmt.Fprintf(out, "[model] %s device=%s limit=%d (%s)\n", info.modelSummary(weights), name, lim.n, lim.source)
	} else {
		if cfg, err = modelConfig(o, spec); err != nil {
			return err
		}
		est = estimateMemory(o, spec, cfg, lim.n)
		weights = est.arrays + constantBuffers(cfg)
		fmt.Fprintf(out, "[model] %s: layers=%d (ssm=%d attn=%d) experts=%d hidden=%d; %s buffers after load device=%s limit=%d (%s)\n",
			cfg.ModelType, cfg.NumLayers, cfg.NumGDN(), cfg.NumLayers-cfg.NumGDN(), cfg.NumExperts, cfg.HiddenSize, comma(weights), name, lim.n, lim.source)
	}
	memLimit := alloc.New(dev.Provider(), alloc.Config{}).Stats().MemoryLimit
	fits := "fits"
	if est.total() > memLimit {
		fits = "does NOT fit"
	}
	fmt.Fprintf(out, "[memory] a run needs ~%s (weights %s); this machine's memory limit is %s: it %s\n", size(est.total()), size(est.weights), size(memLimit), fits)
	kinds := make([]nn.LayerKind, cfg.NumLayers)
	for i := range kinds {
		kinds[i] = nn.Recurrent
		if cfg.IsAttention(i) {
			kinds[i] = nn.Attention
		}
	}
	// The prediction is the stock (lazy) path's, whatever --cache says: when would it die?
	r := &result{policy: cache.Lazy, mode: o.mode, layers: cfg.NumLayers, nSSM: cfg.NumGDN(), limit: lim.n, rate: leakRate(o.mode, kinds)}
	r.baseline = weights + runBuffersPerLayer*cfg.NumLayers
	fmt.Fprintf(out, "[baseline] %s buffers after load + %d per layer x %d layers of cache state = %s live buffers once decoding begins\n",
		comma(weights), runBuffersPerLayer, cfg.NumLayers, comma(r.baseline))
	if r.baseline > lim.n {
		return lim.belowBaseline(fmt.Sprintf("it needs ~%s buffer objects before its first token", comma(r.baseline)))
	}
	printPredict(out, r)
	return nil
}
