package qwen35

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/checkpoint"
)

// LoadCheckpoint builds the model of an open checkpoint (nn/models' Load and
// LoadCheckpoint are the way in): its config.json (ck.Config, HF layout) and headers
// are not read again. Modules stored with MLX's affine quantization (<module>.scales
// present, config's quantization block) load as quantized layers and stay packed on
// the device. Tensors may use HF runtime names (fused experts), save_pretrained's
// per-expert names, the model.language_model. prefix of published checkpoints (mtp.*
// and model.visual.* are ignored) or mlx-lm's sanitized layout (detected by the files'
// format "mlx", switch_mlp tensors or a [C, K, 1] conv1d; its norms already hold
// 1 + w). Weights keep their stored dtype (float32, float16 or bfloat16) on g; see the
// package doc for the dtype each op computes in. ck stays open; the caller closes it.
func LoadCheckpoint(ck *checkpoint.Checkpoint, g *graph.Graph, opt nn.Options) (*Model, error) {
	cfg, src, err := open(ck)
	if err != nil {
		return nil, err
	}
	return build(cfg, g, src, opt, src.writtenByMLX)
}

// open reads ck's config and makes its source, as LoadCheckpoint and Inspect both do:
// a checkpoint mlx-lm wrote is read with mlx-lm's defaults for absent keys (rope_theta
// 100000, head_dim from hidden_size, the interval layer rule).
func open(ck *checkpoint.Checkpoint) (*Config, *fileSource, error) {
	path := filepath.Join(ck.Dir, "config.json")
	parse := ParseHFConfig
	src := newFileSource(ck)
	if src.writtenByMLX {
		parse = ParseModelArgs
	}
	cfg, err := parse(ck.Config)
	if err != nil {
		return nil, nil, fmt.Errorf("qwen35: load config %s: %w", path, err)
	}
	return cfg, src, nil
}

// fileSource is nn's checkpoint source with the naming scheme and layout one
// checkpoint uses, found from its tensor names.
type fileSource struct {
	nn.CheckpointSource
	body string // what "model." becomes: "model.", "model.language_model." or "language_model.model."
	head string // the lm_head tensor's name
	mlx  bool   // mlx-lm's layout (files it wrote, switch_mlp experts or a [C, K, 1] conv): norms already 1 + w
	// writtenByMLX: the files say format "mlx" (mlx-lm's save_model), so mlx-lm's model
	// rules apply, not only its layout.
	writtenByMLX bool
}

func newFileSource(ck *checkpoint.Checkpoint) *fileSource {
	s := &fileSource{body: "model.", head: "lm_head.weight", writtenByMLX: ck.Format() == "mlx"}
	has := func(name string) bool { _, _, ok := ck.Info(name); return ok }
	// Quantized modules say nothing of the layout: checkpoint.QuantizeCheckpoint quantizes a
	// Hugging Face layout as it stands (zero-centred norms), so .scales is no evidence.
	s.mlx = s.writtenByMLX
	for _, p := range []string{"model.language_model.", "language_model.model.", "model."} {
		if has(p + "embed_tokens.weight") {
			s.body = p
			break
		}
	}
	for _, h := range []string{"lm_head.weight", "language_model.lm_head.weight"} {
		if has(h) {
			s.head = h
			break
		}
	}
	for _, n := range ck.Names() {
		if strings.Contains(n, ".switch_mlp.") {
			s.mlx = true
		}
		if strings.HasSuffix(n, "linear_attn.conv1d.weight") {
			if t, _, _ := ck.Info(n); len(t.Shape) == 3 && t.Shape[1] > 1 && t.Shape[2] == 1 {
				s.mlx = true
			}
		}
	}
	s.CheckpointSource = nn.CheckpointSource{Family: family, Checkpoint: ck, Rename: s.fileName, CentredPlusOne: s.mlx}
	return s
}

// fileName maps a model name ("model.…" or "lm_head.weight") to the checkpoint's.
func (s *fileSource) fileName(name string) string {
	if name == "lm_head.weight" {
		return s.head
	}
	return s.body + strings.TrimPrefix(name, "model.")
}

// NewRandom builds a model of cfg with deterministic random weights drawn from seed
// (the leak repro's model; nn.RandomSource: linear weights ~ N(0, s^2) with
// s = 0.5/sqrt(in) clamped to [0.02, 0.1], norms near 1, A_log = log(U(1, 16)),
// dt_bias near 1).
func NewRandom(cfg *Config, g *graph.Graph, seed int64, opt nn.Options) (*Model, error) {
	return build(cfg, g, nn.NewRandomSource(seed), opt, false)
}

// RandomCheckpoint returns the tensors of a Hugging Face checkpoint of cfg's structure
// holding NewRandom's weights for seed, rounded to dt (checkpoint.F32, checkpoint.F16
// or checkpoint.BF16): names under "model." and "lm_head.weight", zero-centred norms
// stored as w (the model adds 1), conv1d as [C, 1, K], experts as save_pretrained
// writes them ("<mlp>.experts.<e>.<proj>.weight"). Written by
// checkpoint.WriteCheckpoint with cfg's config.json, it is a real-size test model made
// without any download (see cmd/quantize -random); quantize it for the quantized
// formats.
func RandomCheckpoint(cfg *Config, seed int64, dt checkpoint.DType) ([]checkpoint.WriteTensor, error) {
	return nn.RandomCheckpoint(family, seed, dt, func(g *graph.Graph, src nn.Source) error {
		_, err := build(cfg, g, src, nn.Options{}, false)
		return err
	})
}

// cacheBuffersPerLayer is what a batch run holds per layer besides the weights once one
// request decodes: the layer's cache state and batch metadata (the KV cache's keys,
// values, offset and left padding and its mask's source, or the GDN cache's conv and
// recurrent states, lengths and left padding). Measured on random models of every type
// and layer mix; nn/models' TestDescriptionMatchesBuild pins it.
const cacheBuffersPerLayer = 5

// plainCacheBuffersPerLayer is the same on the plain path: the KV cache's keys and
// values, or the GDN cache's conv and recurrent states (the metadata stays unset).
const plainCacheBuffersPerLayer = 2

// Describe returns what the random model of cfg is made of (float32 parameters), from
// a dry run of the build: nothing is allocated.
func Describe(cfg *Config) (*nn.Description, error) { return describe(cfg, &nn.RandomSource{}) }

// InspectCheckpoint checks an open checkpoint exactly as LoadCheckpoint would
// (config.json, then every tensor the model reads: name, shape, dtype and
// quantization) from the safetensors headers alone, reading no tensor data, and
// describes the model it holds: a checkpoint LoadCheckpoint refuses,
// InspectCheckpoint refuses with the same error. ck stays open.
func InspectCheckpoint(ck *checkpoint.Checkpoint) (*nn.Description, error) {
	cfg, src, err := open(ck)
	if err != nil {
		return nil, err
	}
	d, err := describe(cfg, src)
	if err != nil {
		return nil, err
	}
	d.SetStorage(ck)
	return d, nil
}

// describe runs build's parameter draws dry over src.
func describe(cfg *Config, src nn.Source) (*nn.Description, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return nn.Record(&nn.Description{
		ModelType:                 cfg.ModelType,
		Kinds:                     append([]nn.LayerKind(nil), cfg.LayerTypes...),
		Sparse:                    cfg.NumSparse(),
		Experts:                   cfg.NumExperts,
		Hidden:                    cfg.HiddenSize,
		Vocab:                     cfg.VocabSize,
		KVWidth:                   cfg.NumKVHeads * cfg.HeadDim,
		Constants:                 constantArrays(cfg),
		CacheBuffersPerLayer:      cacheBuffersPerLayer,
		PlainCacheBuffersPerLayer: plainCacheBuffersPerLayer,
	}, src, func(b *nn.Builder) { draw(cfg, b) })
}
