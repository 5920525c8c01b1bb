package qwen3

import (
	"fmt"
	"path/filepath"

	"github.com/ingotml/ingot/graph"
	"github.com/ingotml/ingot/nn"
	"github.com/ingotml/ingot/nn/checkpoint"
)

// config parses an open checkpoint's config.json.
func config(ck *checkpoint.Checkpoint) (*Config, error) {
	cfg, err := ParseHFConfig(ck.Config)
	if err != nil {
		return nil, fmt.Errorf("qwen3: load config %s: %w", filepath.Join(ck.Dir, "config.json"), err)
	}
	return cfg, nil
}

// source reads ck's parameters: Hugging Face's names, which mlx-community's
// conversions keep (their quantized modules add .scales and .biases).
func source(ck *checkpoint.Checkpoint) nn.Source {
	return &nn.CheckpointSource{Family: family, Checkpoint: ck}
}

// LoadCheckpoint builds the model of an open checkpoint (nn/models' Load and
// LoadCheckpoint are the way in): config.json (HF layout) and the weights, Hugging
// Face's names. Modules stored with MLX's affine quantization (<module>.scales
// present, config's quantization block) load as quantized layers and stay packed on
// the device. Weights keep their stored dtype. ck stays open; the caller closes it.
func LoadCheckpoint(ck *checkpoint.Checkpoint, g *graph.Graph, opt nn.Options) (*Model, error) {
	cfg, err := config(ck)
	if err != nil {
		return nil, err
	}
	return build(cfg, g, source(ck), opt)
}

// InspectCheckpoint checks an open checkpoint exactly as LoadCheckpoint would
// (config.json, then every tensor the model reads: name, shape, dtype and
// quantization) from the safetensors headers alone, and describes the model it holds:
// a checkpoint LoadCheckpoint refuses, InspectCheckpoint refuses with the same error.
// ck stays open.
func InspectCheckpoint(ck *checkpoint.Checkpoint) (*nn.Description, error) {
	cfg, err := config(ck)
	if err != nil {
		return nil, err
	}
	d, err := describe(cfg, source(ck))
	if err != nil {
		return nil, err
	}
	d.SetStorage(ck)
	return d, nil
}

// NewRandom builds a model of cfg with deterministic random weights drawn from seed
// (nn.RandomSource: linear weights ~ N(0, s^2) with s = 0.5/sqrt(in) clamped to
// [0.02, 0.1], the embedding ~ N(0, 0.25), norms near 1, biases near 0).
func NewRandom(cfg *Config, g *graph.Graph, seed int64, opt nn.Options) (*Model, error) {
	return build(cfg, g, nn.NewRandomSource(seed), opt)
}

// RandomCheckpoint returns the tensors of a Hugging Face checkpoint of cfg's structure
// holding NewRandom's weights for seed, rounded to dt (F32, F16 or BF16): a real-size
// test model made without any download (cmd/quantize -random).
func RandomCheckpoint(cfg *Config, seed int64, dt checkpoint.DType) ([]checkpoint.WriteTensor, error) {
	return nn.RandomCheckpoint(family, seed, dt, func(g *graph.Graph, src nn.Source) error {
		_, err := build(cfg, g, src, nn.Options{})
		return err
	})
}

// cacheBuffersPerLayer is what a batch run holds per layer besides the weights once
// one request decodes: the KV cache's keys, values, offset and left padding and its
// mask's source. cmd/decode's TestPredictOnlyMatchesRun pins it against a real run.
const cacheBuffersPerLayer = 5

// plainCacheBuffersPerLayer is the same on the plain path: the keys and values.
const plainCacheBuffersPerLayer = 2

// Describe returns what the random model of cfg is made of (float32 parameters), from
// a dry run of the build: nothing is allocated.
func Describe(cfg *Config) (*nn.Description, error) { return describe(cfg, &nn.RandomSource{}) }

// describe runs build's parameter draws dry over src.
func describe(cfg *Config, src nn.Source) (*nn.Description, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return nn.Record(&nn.Description{
		ModelType:                 cfg.ModelType,
		Kinds:                     cfg.Kinds(),
		Hidden:                    cfg.HiddenSize,
		Vocab:                     cfg.VocabSize,
		KVWidth:                   cfg.NumKVHeads * cfg.HeadDim,
		CacheBuffersPerLayer:      cacheBuffersPerLayer,
		PlainCacheBuffersPerLayer: plainCacheBuffersPerLayer,
	}, src, func(b *nn.Builder) { draw(cfg, b) })
}
